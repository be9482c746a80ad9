package extractworker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extractworker"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// quotingValidator is the worst case of a Host validator: its error quotes
// the content it rejected.
type quotingValidator struct{}

func (quotingValidator) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if strings.Contains(c.Content, "reject") {
		return errors.New("rejected content: " + c.Content)
	}
	return nil
}

// TestNoContentInLogsOrEvents: a canary in payloads, proposals, Extractor
// errors, validator errors and panic values never reaches a log entry or an
// event.
func TestNoContentInLogsOrEvents(t *testing.T) {
	eachStore(t, func(t *testing.T, e *env) {
		const canary = "CANARY-4e1d-extract"
		p := testkit.Principal("tenant-a", memorykit.ActorUser, "user-1")
		q := e.enqueuer(e.store, testkit.NewAuthorizer().Grant("user-1", e.Scope, memorykit.PermExtract))
		ids := make(map[string]string)
		for _, ref := range []string{"stored", "provider-error", "code-error", "rejected", "panics", "too-long"} {
			res := q.Enqueue(e.Ctx, extractworker.Turn{Principal: p, Scope: e.Scope, RunRef: ref, Payload: "turn " + canary + " " + ref})
			if res.Status != extractworker.EnqueueQueued {
				t.Fatalf("enqueue %s: %+v", ref, res)
			}
			ids[res.JobID] = ref
		}
		x := newExtractor(e.Clock)
		x.fn = func(_ context.Context, in memorykit.ExtractionInput) ([]memorykit.Proposal, error) {
			ps := []memorykit.Proposal{{Kind: memorykit.KindNote, Key: "note " + canary, Content: "remember " + canary}}
			switch ids[in.JobID] {
			case "provider-error":
				return nil, memorykit.Recoverable(errors.New("provider said: " + in.Payload))
			case "code-error":
				return nil, &memorykit.Error{Op: "x", Kind: memorykit.ErrUnavailable, Reason: "quote " + canary, Err: errors.New(canary)}
			case "rejected":
				ps[0].Content = "please reject " + canary
			case "panics":
				panic("extractor exploded on " + in.Payload)
			case "too-long":
				ps[0].Content = strings.Repeat(canary, 1000)
			}
			return ps, nil
		}
		cfg := e.config("worker-a", x)
		g, err := memorykit.NewWriteGuard(storetest.Limits(), quotingValidator{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Guard, cfg.BatchSize = g, 1
		w := e.worker(cfg)
		for i := 0; i < 6; i++ {
			func() {
				defer func() {
					if v := recover(); v != nil {
						if strings.Contains(fmtValue(v), canary) {
							t.Errorf("the worker's panic value carries content")
						}
					}
				}()
				if _, err := w.RunOnce(e.Ctx); err != nil {
					t.Fatalf("RunOnce: %v", err)
				}
			}()
		}
		if n := len(e.candidates()); n != 1 {
			t.Fatalf("%d candidates, want 1 (the valid proposal)", n)
		}
		if len(e.Sink.OfKind(memorykit.EventCandidateInvalid)) != 2 || len(e.Sink.OfKind(memorykit.EventJobRetry)) != 3 {
			t.Fatalf("events: %+v", e.Sink.Events())
		}
		for _, ev := range e.Sink.OfKind(memorykit.EventJobRetry) {
			if err := storekit.CheckReasonCode("", ev.Reason); err != nil {
				t.Errorf("retry reason %q is not a reason code", ev.Reason)
			}
		}
		e.NoContent(canary)
	})
}

func fmtValue(v any) string {
	if s, ok := v.(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}
