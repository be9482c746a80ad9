package modelcall_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/plumbing/modelcall"
)

func TestLimitBody(t *testing.T) {
	for _, c := range []struct {
		body    string
		limit   int64
		wantErr bool
	}{
		{"", 4, false},
		{"abcd", 4, false}, // exactly the bound
		{"abcde", 4, true}, // one byte over
		{strings.Repeat("x", 10000), 4096, true},
	} {
		res := &http.Response{Body: io.NopCloser(strings.NewReader(c.body))}
		modelcall.LimitBody(res, c.limit)
		got, err := io.ReadAll(res.Body)
		if c.wantErr {
			if !errors.Is(err, modelcall.ErrTooLarge) || int64(len(got)) > c.limit {
				t.Errorf("%d bytes, limit %d: read %d, err %v", len(c.body), c.limit, len(got), err)
			}
			continue
		}
		if err != nil || string(got) != c.body {
			t.Errorf("%d bytes, limit %d: read %q, err %v", len(c.body), c.limit, got, err)
		}
	}
	modelcall.LimitBody(nil, 1) // no response: nothing to bound
}

func TestFailure(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hdr := http.Header{"Retry-After": {"12"}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name   string
		ctx    context.Context
		err    error
		res    *http.Response
		reason string
		retry  bool
		after  time.Duration
	}{
		{"context first", cancelled, errors.New("x"), &http.Response{StatusCode: 401}, "context_done", true, 0},
		{"too large", context.Background(), modelcall.ErrTooLarge, &http.Response{StatusCode: 200}, "provider_response_too_large", true, 0},
		{"no response", context.Background(), errors.New("dial"), nil, "provider_unreachable", true, 0},
		{"429", context.Background(), errors.New("x"), &http.Response{StatusCode: 429, Header: hdr}, "provider_status_429", true, 12 * time.Second},
		{"401 keeps no wait", context.Background(), errors.New("x"), &http.Response{StatusCode: 401, Header: hdr}, "provider_status_401", false, 0},
		{"200 that did not decode", context.Background(), errors.New("json"), &http.Response{StatusCode: 200}, "provider_bad_response", true, 0},
	} {
		err := modelcall.Failure(c.ctx, "test.op", c.err, c.res, now, time.Minute)
		var me *memorykit.Error
		if !errors.As(err, &me) || me.Reason != c.reason || me.Retry != c.retry || me.RetryAfter != c.after || !errors.Is(err, memorykit.ErrUnavailable) {
			t.Errorf("%s: %v (after %v)", c.name, err, me.RetryAfter)
		}
		if c.err != nil && c.err != modelcall.ErrTooLarge && errors.Is(err, c.err) {
			t.Errorf("%s: the SDK's error is wrapped", c.name)
		}
	}
	if err := modelcall.Failure(cancelled, "op", nil, nil, now, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("context error not reachable: %v", err)
	}
}
