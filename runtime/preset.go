package runtime

import (
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/storekit"
)

// WorkersV1 returns the background actors' settings, version 1. Every
// field is set explicitly and the result passes New's checks; a Host may
// copy it and change any field. Different numbers need a new preset
// version, not an edit of this one.
//
//   - leases last one minute, longer than both deadlines (an Embed call
//     gets 10 seconds, an Extractor call 30);
//   - the embedding worker embeds 32 records per call, the extraction
//     worker leases 4 jobs per round, and both wait one second after an
//     empty round;
//   - a failed embedding, a failed job and a recoverable store error are
//     retried after 1s, 2s, 4s ... up to one minute; a job gets 5 attempts;
//   - expired leases are reaped every 10 seconds, and cancelled work has
//     5 seconds to hand its leases back;
//   - a crashed actor restarts after 1s, 2s, 4s ... up to one minute, and
//     the supervisor gives up after 10 restarts in a row.
func WorkersV1() Workers {
	backoff := memorykit.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: 2}
	return Workers{
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
		Restart:         backoff,
		MaxRestarts:     10,
	}
}

// Essentials are the parts of a Runtime only the Host can decide. Preset
// fills everything else from the versioned presets.
type Essentials struct {
	// Guard holds the write Limits (memorykit.LimitsV1 unless the Host has
	// reasons) and the Host's ContentValidator. It must be the guard the
	// Store was built with.
	Guard *memorykit.WriteGuard
	// Store is the one storekit.Store (memorystore or pgstore) every role
	// uses; the Host owns and closes it.
	Store storekit.Store
	// Authorizer is the Host's fail-closed project authorizer.
	Authorizer memorykit.Authorizer
	// Embedder computes record and query embeddings. The recall policy is
	// memorykit.RecallPolicyV1 for its profile and dimension. A nil
	// Embedder selects lexical-only recall (memorykit.RecallPolicyLexicalV1)
	// and starts no embedding worker.
	Embedder memorykit.Embedder
	// Extractor proposes candidates from finished turns.
	Extractor memorykit.Extractor
	// Clock drives every deadline, lease, retry and backoff (clock.New()
	// in production).
	Clock clock.Clock
	// WorkerID names this Runtime on every lease; unique per process
	// sharing a database.
	WorkerID string
	// Logger receives content-free logs.
	Logger *zap.Logger
	// Events receives content-free events (memorykit.DiscardEvents{} to
	// drop them).
	Events memorykit.EventSink
}

// Preset returns a complete Config from the Host's Essentials and the
// version 1 presets: memorykit.RecallPolicyV1 for the Embedder's profile
// and dimension (memorykit.RecallPolicyLexicalV1 when Embedder is nil),
// WorkersV1 and memorytools.LimitsV1. Preset checks nothing and fills in
// nothing the Host left out: New validates the result, so a missing
// essential is still refused by name. The Host may change any field of
// the returned Config before calling New.
func Preset(e Essentials) Config {
	cfg := Config{
		Guard:      e.Guard,
		Policy:     memorykit.RecallPolicyLexicalV1(),
		Embedder:   e.Embedder,
		Authorizer: e.Authorizer,
		Extractor:  e.Extractor,
		Clock:      e.Clock,
		WorkerID:   e.WorkerID,
		Logger:     e.Logger,
		Events:     e.Events,
		Workers:    WorkersV1(),
		Tools:      memorytools.LimitsV1(),
		Outbox:     OutboxV1(),
		Mode:       ModeAll,
	}
	if e.Store != nil {
		cfg.Stores = StoresOf(e.Store)
	}
	if e.Embedder != nil {
		cfg.Policy = memorykit.RecallPolicyV1(e.Embedder.Profile(), e.Embedder.Dimension())
	}
	return cfg
}

// OutboxV1 is the version 1 outbox: up to 1,000 turns or 8 MiB of
// transcripts held while the job store is unreachable, retried from every
// second up to every 30 s. Without an OnDrain callback what is left at
// Drain is reported (count, content-free) and dropped.
func OutboxV1() Outbox {
	return Outbox{
		MaxTurns: 1000, MaxBytes: 8 << 20,
		Retry: memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2},
	}
}
