package main

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

// The write limits, the recall policy, the worker schedule and the tool
// limits are memorykit's version 1 presets (memorykit.LimitsV1,
// memorykit.RecallPolicyV1 for the local hash-v2 embedder,
// mkruntime.WorkersV1 and memorytools.LimitsV1), applied by
// mkruntime.Preset in host.go; see each preset's documentation for its
// numbers. A Host that needs other bounds edits the Config Preset returns.
