package turn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/projector"
	"github.com/goagents/memorykit/turn"
)

func TestProviderErrorIsContentFreeAndClassified(t *testing.T) {
	cases := []struct {
		status int
		reason string
		retry  bool
	}{
		{0, "provider_unreachable", true},
		{400, "provider_status_400", false},
		{401, "provider_status_401", false},
		{408, "provider_status_408", true},
		{409, "provider_status_409", true},
		{429, "provider_status_429", true},
		{500, "provider_status_500", true},
		{503, "provider_status_503", true},
	}
	for _, c := range cases {
		err := turn.ProviderError(context.Background(), "x.run_turn", c.status)
		var me *memorykit.Error
		if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) {
			t.Fatalf("status %d: %v is not ErrUnavailable", c.status, err)
		}
		if me.Reason != c.reason || memorykit.IsRecoverable(err) != c.retry {
			t.Errorf("status %d: reason %q recoverable %v, want %q %v", c.status, me.Reason, memorykit.IsRecoverable(err), c.reason, c.retry)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := turn.ProviderError(ctx, "x.run_turn", 500)
	if !errors.Is(err, context.Canceled) || memorykit.ReasonCode(err) != "context_done" {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestTranscriptLeavesTheMemoryViewOut(t *testing.T) {
	msgs := []projector.Message{
		{Role: projector.RoleSystem, Content: "sys"},
		{Role: projector.RoleUser, Content: "earlier"},
		{Role: projector.RoleAssistant, Content: "ok"},
		{Role: projector.RoleUser, Name: projector.ViewName, Content: "VIEW"},
		{Role: projector.RoleUser, Content: "now"},
	}
	if got, want := turn.Transcript(msgs, "answer"), "user: now\nassistant: answer"; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
	// A view after the last user message is never taken for it.
	msgs = append(msgs[:4:4], projector.Message{Role: projector.RoleUser, Name: projector.ViewName, Content: "VIEW2"})
	if got := turn.Transcript(msgs, "a"); got != "user: earlier\nassistant: a" {
		t.Errorf("transcript %q", got)
	}
}

func TestBeginRefusesMissingSessionRunRefAndToolMessages(t *testing.T) {
	var res turn.Result
	if err := turn.Begin(context.Background(), "x", turn.Turn{RunRef: "r"}, &res); !errors.Is(err, memorykit.ErrInvalidInput) {
		t.Errorf("missing session: %v", err)
	}
}
