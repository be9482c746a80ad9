package extractworker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// TestRetryAfterIsTheLeastBackoff: a recoverable Extractor error carrying
// RetryAfter (a provider's Retry-After) delays the next attempt by at
// least that long on the injected clock; a shorter one leaves the worker's
// own backoff in charge; an absurd one is capped at MaxRetryAfter. Runs on
// every store.
func TestRetryAfterIsTheLeastBackoff(t *testing.T) {
	cases := []struct {
		name       string
		retryAfter time.Duration
		want       time.Duration // from the failure to the job's AvailableAt
	}{
		{"longer than the backoff", 5 * time.Minute, 5 * time.Minute},
		{"shorter than the backoff", time.Second, retry.Initial},
		{"capped", 30 * 24 * time.Hour, time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eachStore(t, func(t *testing.T, e *env) {
				jobs := e.enqueue(1, 3, turnPayload)
				x := newExtractor(e.Clock)
				x.fn = func(context.Context, memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
					return nil, &memorykit.Error{Op: "provider.generate", Kind: memorykit.ErrUnavailable,
						Reason: "provider_status_429", Retry: true, RetryAfter: c.retryAfter}
				}
				w := e.worker(e.config("worker-a", x))
				failedAt := e.Clock.Now()
				r, err := w.RunOnce(e.Ctx)
				if err != nil || r.Retried != 1 {
					t.Fatalf("round = %+v, %v; want one retried job", r, err)
				}
				j := e.job(jobs[0].ID)
				// Stores keep microseconds.
				if got := j.AvailableAt.Sub(failedAt.Truncate(time.Microsecond)); got != c.want {
					t.Fatalf("next attempt after %v, want %v", got, c.want)
				}
				if j.LastError != "provider_status_429" {
					t.Errorf("LastError = %q", j.LastError)
				}
				// Not leased a moment before its time, leased at it.
				e.Clock.Set(j.AvailableAt.Add(-time.Millisecond))
				if r, _ := w.RunOnce(e.Ctx); r.Leased != 0 {
					t.Fatalf("job leased %v before its Retry-After", time.Millisecond)
				}
				e.Clock.Set(j.AvailableAt)
				if r, _ := w.RunOnce(e.Ctx); r.Leased != 1 {
					t.Fatalf("job not leased at its Retry-After: %+v", r)
				}
			})
		})
	}
}

// TestRelatedLookup: the worker hands the lookup's memories to the
// Extractor; a failing or panicking lookup degrades to none with a
// content-free event, and the job still completes.
func TestRelatedLookup(t *testing.T) {
	const canary = "CANARY-related-9f2"
	related := []memorykit.RelatedMemory{{Kind: memorykit.KindFact, Key: "db", Content: "PostgreSQL"}}
	cases := map[string]struct {
		lookup func(context.Context, storekit.Job) ([]memorykit.RelatedMemory, error)
		want   int
		event  string
	}{
		"found": {func(context.Context, storekit.Job) ([]memorykit.RelatedMemory, error) { return related, nil }, 1, ""},
		"fails": {func(context.Context, storekit.Job) ([]memorykit.RelatedMemory, error) {
			return nil, memorykit.Recoverable(errors.New("store said " + canary))
		}, 0, "error"},
		"panics": {func(context.Context, storekit.Job) ([]memorykit.RelatedMemory, error) { panic(canary) }, 0, "related_panic"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.store = newFaultStoreOn(t, e)
			e.enqueue(1, 3, turnPayload)
			x := newExtractor(e.Clock)
			var got []memorykit.RelatedMemory
			x.fn = func(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
				got = in.Related
				return proposals(in), nil
			}
			cfg := e.config("worker-a", x)
			cfg.Related = c.lookup
			r, err := e.worker(cfg).RunOnce(e.Ctx)
			if err != nil || r.Completed != 1 {
				t.Fatalf("round = %+v, %v; want the job completed", r, err)
			}
			if len(got) != c.want {
				t.Errorf("extractor saw %d related memories, want %d", len(got), c.want)
			}
			evs := e.Sink.OfKind(memorykit.EventExtractionRelatedFailed)
			switch {
			case c.event == "" && len(evs) != 0:
				t.Errorf("unexpected %v", evs)
			case c.event != "" && (len(evs) != 1 || evs[0].Reason != c.event || evs[0].JobID == ""):
				t.Errorf("events = %+v, want one %s", evs, c.event)
			}
			e.NoContent(canary)
		})
	}
}
