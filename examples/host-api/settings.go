package main

import (
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/memorytools"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/supervisor"
)

// This file holds every bound the Host runs with. memorykit has no
// defaults: a Host writes its numbers down, and reviewers can see them in
// one place.

// maxBodyBytes bounds every request body. The largest legitimate body is a
// write or correction (content up to Limits.MaxContentBytes plus metadata
// and sources) or a chat turn with a little history.
const maxBodyBytes = 64 << 10

// maxHistoryMessages bounds the earlier messages a chat request may send.
const maxHistoryMessages = 20

// maxModelSteps bounds the model calls of one chat turn (tool calls
// included), so a confused model cannot loop.
const maxModelSteps = 4

// defaultPageSize is the candidates listing's page size when the caller
// gives no limit; Limits.MaxListSize is the most it may ask for.
const defaultPageSize = 50

// hostLimits bounds every write.
func hostLimits() memorykit.Limits {
	return memorykit.Limits{
		Version:            1,
		MaxKeyBytes:        128,
		MaxContentBytes:    4096,
		MaxMetadataEntries: 8,
		MaxMetadataBytes:   1024,
		MaxSources:         8,
		MaxSourceBytes:     512,
		MaxListSize:        100,
		MaxJobPayloadBytes: 32 << 10, MaxReasonBytes: 1024,
	}
}

// hostPolicy configures recall: memorykit's versioned preset for the local
// hash-v2 embedder, unchanged (see memorykit.RecallPolicyV1 for why each
// number is what it is).
func hostPolicy() memorykit.RecallPolicy {
	return memorykit.RecallPolicyV1(embedder.LocalV2Profile, embedder.LocalV2Dimension)
}

// hostWorkers sets leases, retries and the background schedule.
func hostWorkers() mkruntime.Workers {
	backoff := memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	return mkruntime.Workers{
		LeaseTTL:        time.Minute,
		EmbedBatch:      32,
		EmbedPoll:       time.Second,
		EmbedDeadline:   10 * time.Second,
		EmbedRetry:      backoff,
		ExtractBatch:    4,
		ExtractPoll:     time.Second,
		JobDeadline:     30 * time.Second,
		JobRetry:        backoff,
		JobMaxAttempts:  5,
		JobMaxReaps:     10,
		ReapInterval:    10 * time.Second,
		StoreBackoff:    backoff,
		HandBackTimeout: 5 * time.Second,
		Restart:         supervisor.BackoffPolicy{Initial: time.Second, Max: time.Minute, Multiplier: 2, MaxRestarts: 10},
	}
}

// hostToolLimits bounds the memory tools' arguments and results.
func hostToolLimits() memorytools.Limits {
	return memorytools.Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 500, MaxArgBytes: 8192}
}

// hostOutbox keeps up to 1,000 turns (8 MiB of transcripts) whose
// extraction enqueue failed while the database was unreachable, and tries
// them again every second up to every 30 s. What is left at shutdown is
// only logged (count and job IDs): this demo Host does not persist it.
func hostOutbox() mkruntime.Outbox {
	return mkruntime.Outbox{
		MaxTurns: 1000, MaxBytes: 8 << 20,
		Retry: memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2},
	}
}
