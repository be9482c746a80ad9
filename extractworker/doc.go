// Package extractworker runs memorykit's durable extraction pipeline: the
// Enqueuer that turns an Agent run's finished turn into a leased extraction
// job, the Worker actor that leases those jobs, asks the Host's Extractor
// for candidate memories and stores them idempotently, and the Reaper actor
// that returns expired job and embedding leases to their queues.
//
// # Jobs and attempts
//
// A job has a deterministic identity (storekit.ExtractionJobID), so
// enqueuing the same turn twice is a no-op. Every lease counts one attempt.
// A Worker calls the Extractor under a per-job deadline measured on the
// injected clock, then checks every proposal with the WriteGuard (Limits and
// the Host's ContentValidator) before anything is stored. Valid proposals
// become candidate records with deterministic identities
// (storekit.CandidateID of the job, kind and canonical key), stored
// together with the job's completion in one atomic step, so a retried job
// never duplicates a candidate. Candidates stay hidden from recall until a
// reviewer activates them.
//
// A failed attempt is retried after Config.Retry.Delay(attempt) (Initial *
// Multiplier^(attempt-1), capped at Max), until the job's MaxAttempts is
// used up; the job then becomes a failed tombstone. A non-recoverable
// Extractor error fails the job at once. Completion and final failure keep
// only a content-free tombstone: the payload is scrubbed.
//
// # Shutdown and crashes
//
// Workers lease only while the fetch context lives and finish leased work
// under the work context (see supervisor.Actor). When the work context ends
// mid-job, the worker hands its leases back without counting the attempt.
// When a worker dies without handing back (its Extractor panics, its
// process is killed), the lease expires and the Reaper returns the job to
// the queue, counting the attempt.
//
// # Content
//
// Logs, events and errors carry identifiers, counts and reason codes only.
// Payloads, proposals and the text of Extractor or validator errors never
// reach them.
package extractworker
