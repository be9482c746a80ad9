package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
)

func TestNewDirectoryRejectsBadMembers(t *testing.T) {
	user := func(mod func(*MemberEntry)) DirectoryFile {
		e := MemberEntry{Tenant: "acme", Kind: "user", ID: "alice", Token: "a-long-enough-token",
			Projects: map[string][]string{"apollo": {"read"}}}
		mod(&e)
		return DirectoryFile{Members: []MemberEntry{e}}
	}
	cases := map[string]DirectoryFile{
		"empty":            {},
		"short token":      user(func(e *MemberEntry) { e.Token = "short" }),
		"unknown kind":     user(func(e *MemberEntry) { e.Kind = "admin" }),
		"reviewer kind":    user(func(e *MemberEntry) { e.Kind = "reviewer" }),
		"bad tenant":       user(func(e *MemberEntry) { e.Tenant = "ac me" }),
		"bad project":      user(func(e *MemberEntry) { e.Projects = map[string][]string{"a/b": {"read"}} }),
		"unknown perm":     user(func(e *MemberEntry) { e.Projects = map[string][]string{"apollo": {"admin"}} }),
		"model with token": user(func(e *MemberEntry) { e.Kind = "model" }),
		"model reviews": user(func(e *MemberEntry) {
			e.Kind, e.Token, e.Projects = "model", "", map[string][]string{"apollo": {"review"}}
		}),
		"duplicate token": {Members: []MemberEntry{
			{Tenant: "acme", Kind: "user", ID: "alice", Token: "a-long-enough-token"},
			{Tenant: "acme", Kind: "user", ID: "bob", Token: "a-long-enough-token"},
		}},
		"duplicate member": {Members: []MemberEntry{
			{Tenant: "acme", Kind: "user", ID: "alice", Token: "a-long-enough-token-1"},
			{Tenant: "acme", Kind: "user", ID: "alice", Token: "a-long-enough-token-2"},
		}},
		"two models": {Members: []MemberEntry{
			{Tenant: "acme", Kind: "model", ID: "m1"}, {Tenant: "acme", Kind: "model", ID: "m2"},
		}},
	}
	for name, f := range cases {
		_, err := NewDirectory(f)
		if !errors.Is(err, memorykit.ErrInvalidConfig) {
			t.Errorf("%s: err %v, want ErrInvalidConfig", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "a-long-enough-token") {
			t.Errorf("%s: error quotes a token", name)
		}
	}
}

func TestLoadDirectoryKeepsTokensOutOfErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(path, []byte(`{"members":[{"token":"secret-token-value-123","bogus":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadDirectory(path)
	if !errors.Is(err, memorykit.ErrInvalidConfig) || strings.Contains(err.Error(), "secret-token-value") {
		t.Errorf("malformed file: %v", err)
	}
	if _, err := LoadDirectory(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, memorykit.ErrInvalidConfig) {
		t.Errorf("missing file: %v", err)
	}
}

func TestDirectoryAuthorizesOnlyWhatItLists(t *testing.T) {
	d, err := LoadDirectory("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	alice := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "alice"}}
	model := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: "assistant"}}
	scope := func(tenant, project string) memorykit.Scope {
		return memorykit.Scope{TenantID: tenant, SubjectType: memorykit.SubjectProject, SubjectID: project}
	}
	allowed := []struct {
		p    memorykit.Principal
		perm memorykit.Permission
		s    memorykit.Scope
	}{
		{alice, memorykit.PermErase, scope("acme", "apollo")},
		{model, memorykit.PermModelWrite, scope("acme", "hermes")},
	}
	for _, c := range allowed {
		if err := d.Authorize(ctx, c.p, c.perm, c.s); err != nil {
			t.Errorf("%v %s on %v: %v", c.p.Actor, c.perm, c.s, err)
		}
	}
	denied := []struct {
		p    memorykit.Principal
		perm memorykit.Permission
		s    memorykit.Scope
	}{
		{alice, memorykit.PermRead, scope("acme", "zeus")},                                                                                                   // no such project
		{alice, memorykit.PermRead, scope("globex", "apollo")},                                                                                               // other tenant
		{alice, memorykit.PermRead, memorykit.Scope{TenantID: "acme", SubjectType: memorykit.SubjectUser, SubjectID: "alice"}},                               // user Scope
		{model, memorykit.PermWrite, scope("acme", "apollo")},                                                                                                // models never write directly
		{memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorTool, ID: "alice"}}, memorykit.PermRead, scope("acme", "apollo")}, // same ID, other kind
	}
	for _, c := range denied {
		if err := d.Authorize(ctx, c.p, c.perm, c.s); err == nil {
			t.Errorf("%v %s on %v: allowed", c.p.Actor, c.perm, c.s)
		}
	}

	for header, ok := range map[string]bool{
		"Bearer " + aliceToken:       true,
		"bearer " + aliceToken:       true,
		"Bearer " + aliceToken + "x": false,
		"Bearer":                     false,
		"Token " + aliceToken:        false,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", header)
		if _, got := d.Authenticate(r); got != ok {
			t.Errorf("Authenticate(%q) = %v, want %v", header, got, ok)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Add("Authorization", "Bearer "+aliceToken)
	r.Header.Add("Authorization", "Bearer "+bobToken)
	if _, ok := d.Authenticate(r); ok {
		t.Error("two Authorization headers were accepted")
	}
}

func TestRunFlags(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"-help"}, 0},
		{[]string{"-no-such-flag"}, 2},
		{[]string{"extra"}, 2},
		{[]string{"-memory", "-dsn", "postgres://x"}, 2},
		{[]string{"-data", ""}, 2},
	} {
		var out, errOut bytes.Buffer
		if got := run(ctx, c.args, &out, &errOut); got != c.code {
			t.Errorf("run %v = %d, want %d (stderr %q)", c.args, got, c.code, errOut.String())
		}
	}
}

// TestServeShutsDown starts the real server path (listener, runtime with a
// real clock) and checks that a cancelled context shuts it down cleanly, on
// the embedded store and, when configured, on PostgreSQL. goleak in
// TestMain proves nothing keeps running.
func TestServeShutsDown(t *testing.T) {
	t.Setenv("MEMORYKIT_TOMBSTONE_SECRET", string(testTombstoneSecret))
	stores := []backend{memoryBackend, sqliteBackend}
	if os.Getenv(pgtest.EnvDSN) != "" {
		stores = append(stores, postgresBackend(t))
	}
	for _, b := range stores {
		t.Run(b.name, func(t *testing.T) {
			o := b.options(t)
			core, logs := observer.New(zapcore.InfoLevel)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// Cancelling on the "listening" line plays the SIGTERM.
			log := zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
				if e.Message == "listening" {
					cancel()
				}
				return nil
			}))
			if err := serve(ctx, log, "127.0.0.1:0", "", o.DSN, o.Schema, o.DataDir, ""); err != nil {
				t.Fatalf("serve: %v", err)
			}
			// In order: the HTTP server stops first, then memorykit drains,
			// then the Host reports it stopped (after Stop and the pool).
			want := []string{"listening", "shutting down", "supervisor draining", "supervisor drained", "stopped"}
			next := 0
			for _, e := range logs.All() {
				if next < len(want) && e.Message == want[next] {
					next++
				}
			}
			if next != len(want) {
				var msgs []string
				for _, e := range logs.All() {
					msgs = append(msgs, e.Message)
				}
				t.Errorf("log messages %q do not contain %q in order", msgs, want)
			}
		})
	}
}

// modelFunc adapts a function to Model.
type modelFunc func(context.Context, ModelRequest) (ModelReply, error)

func (f modelFunc) Complete(ctx context.Context, req ModelRequest) (ModelReply, error) {
	return f(ctx, req)
}

// TestChatModelFailures: a failing model is 502 without its message, and a
// model that never stops calling tools is cut off after maxModelSteps.
func TestChatModelFailures(t *testing.T) {
	e := newEnv(t, memoryBackend, nil)
	e.host.model = modelFunc(func(context.Context, ModelRequest) (ModelReply, error) {
		return ModelReply{}, errors.New("provider said: CANARY-PROVIDER-PAYLOAD")
	})
	r := e.must(502, aliceToken, "POST", apollo+"/chat", `{"message":"hi"}`)
	if r.str("error") != "model_unavailable" || strings.Contains(r.raw, "CANARY") {
		t.Errorf("failing model: %s", r.raw)
	}
	calls := 0
	e.host.model = modelFunc(func(context.Context, ModelRequest) (ModelReply, error) {
		calls++
		return ModelReply{ToolCalls: []ToolCall{{ID: "c", Name: "search_memory", Arguments: []byte(`{"query":"x"}`)}}}, nil
	})
	r = e.must(502, aliceToken, "POST", apollo+"/chat", `{"message":"hi"}`)
	if r.str("reason") != "too_many_steps" || calls != maxModelSteps {
		t.Errorf("looping model: %d calls, %s", calls, r.raw)
	}
	e.assertLogsFree("CANARY-PROVIDER-PAYLOAD")
}
