package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

// VerifyFunc is a store's erasure verifier: it looks for canary in what
// the store holds for scope and returns how many places hold it.
type VerifyFunc func(ctx context.Context, scope memorykit.Scope, canary string) (int, error)

// verifierClasses are the character classes a store may escape when it
// writes text (JSON, SQL quoting, COPY, array literals), each planted
// inside a canary. NUL is refused by validation, so it is not among them.
var verifierClasses = []struct{ name, text string }{
	{"quote", "'"}, {"double_quote", `"`}, {"backslash", `\`}, {"tab", "\t"}, {"newline", "\n"},
	{"carriage_return", "\r"}, {"ampersand", "&"}, {"less", "<"}, {"greater", ">"},
	{"line_separator", "\u2028"}, {"paragraph_separator", "\u2029"}, {"emoji", "\U0001F600"},
	{"cjk", "记忆"}, {"combining", "e\u0301"}, {"mixed", `Tom & Jerry <script>'"\`},
	{"slash", "</"},
}

// RunVerifierConformance plants canaries holding every class of special
// character in every content-bearing field a Host can write (content,
// key, metadata keys and values, source kinds and refs, an earlier
// version kept in a revision, a queued job's transcript and run's
// candidate) of one Scope, and checks that verify finds each while it is
// live and none once the Scope's records are erased (erase also finishes
// the jobs quoting them). A second Scope holds one of the same canaries:
// verify of the first Scope must not report it, verify of the second
// must. s must be empty and built with this package's Limits and guard.
func RunVerifierConformance(t *testing.T, s storekit.Store, verify VerifyFunc) {
	t.Helper()
	ctx := context.Background()
	scope := Scope(t, "tenant-v", "verify")
	other := Scope(t, "tenant-w", "verify")
	user := memorykit.Actor{Kind: memorykit.ActorUser, ID: "user-1"}
	type planted struct {
		what, canary string
		scope        memorykit.Scope
	}
	var live []planted
	var ids []string
	shared := ""
	for i, c := range verifierClasses {
		mk := func(field string) string { return fmt.Sprintf("vq%02d%szk%s", i, c.text, field) }
		// Single-line fields refuse line breaks; metadata keys and source
		// kinds are [a-z0-9_.-] only, so they carry a plain canary.
		line := func(field string) string {
			return fmt.Sprintf("vq%02d%szk%s", i, strings.NewReplacer("\n", "", "\r", "").Replace(c.text), field)
		}
		plain := func(field string) string { return fmt.Sprintf("vq%02dzk%s", i, field) }
		content, earlier, key := mk("content"), mk("revision"), mk("key")
		metaKey, metaVal, srcKind, srcRef, job := plain("metakey"), line("metavalue"), plain("srckind"), line("srcref"), mk("job")
		in := memorykit.NewRecord{Scope: scope, Kind: memorykit.KindFact, Key: key, Content: earlier,
			Metadata: map[string]string{metaKey: "x", "note": metaVal},
			Sources:  []memorykit.Source{{Kind: srcKind, Ref: srcRef}},
			Status:   memorykit.StatusActive, Actor: user, Reason: "plant"}
		r, err := s.Create(ctx, in)
		if err != nil {
			t.Fatalf("%s: Create: %v", c.name, err)
		}
		if _, err := s.Correct(ctx, storekit.Correction{Transition: storekit.Transition{Scope: scope, ID: r.ID, Actor: user, Reason: "fix"},
			Content: content, Sources: in.Sources}); err != nil {
			t.Fatalf("%s: Correct: %v", c.name, err)
		}
		ids = append(ids, r.ID)
		jobID := storekit.ExtractionJobID(scope, fmt.Sprintf("run-%d/turn-1", i))
		if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: jobID, Scope: scope, Payload: "said " + content + " and " + job,
			MaxAttempts: 2, MaxReaps: 2}); err != nil {
			t.Fatalf("%s: EnqueueJob: %v", c.name, err)
		}
		for what, canary := range map[string]string{"content": content, "revision": earlier, "key": storekit.NormalizeKey(key),
			"metadata key": metaKey, "metadata value": metaVal, "source kind": srcKind, "source ref": srcRef, "job payload": job} {
			live = append(live, planted{what: c.name + " " + what, canary: canary, scope: scope})
		}
		if c.name == "mixed" {
			shared = content
		}
	}
	if _, err := s.Create(ctx, memorykit.NewRecord{Scope: other, Kind: memorykit.KindFact, Key: "shared", Content: "also " + shared,
		Status: memorykit.StatusActive, Actor: user, Reason: "plant"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range live {
		n, err := verify(ctx, p.scope, p.canary)
		if err != nil {
			t.Fatalf("verify %s: %v", p.what, err)
		}
		if n == 0 {
			t.Errorf("%s: live, but the verifier says not found", p.what)
		}
	}
	if t.Failed() {
		return
	}
	for _, id := range ids {
		if _, err := s.Forget(ctx, storekit.Transition{Scope: scope, ID: id, Actor: user, Reason: "forget"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Erase(ctx, storekit.Transition{Scope: scope, ID: id, Actor: user, Reason: "erase_request"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range live {
		n, err := verify(ctx, p.scope, p.canary)
		if err != nil {
			t.Fatalf("verify %s after erase: %v", p.what, err)
		}
		if n != 0 {
			t.Errorf("%s: erased, but the verifier finds it in %d places", p.what, n)
		}
	}
	if n, err := verify(ctx, other, shared); err != nil || n == 0 {
		t.Errorf("the other Scope's live copy of a canary: %d, %v; want found", n, err)
	}
}
