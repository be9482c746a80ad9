package runtime_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	mkruntime "github.com/goagents/memorykit/runtime"
	"github.com/goagents/memorykit/writer"
)

// TestImportAndRememberRefuseBlankContent: content that shows nothing is
// refused by Import (item by item, reason "blank") and by Remember, as it
// is by every other write path; the visible item beside them is stored.
func TestImportAndRememberRefuseBlankContent(t *testing.T) {
	cfg, b := config(t)
	b, s := running(t, cfg, b)
	ctx := context.Background()
	blanks := []string{"   ", "\u200b\u200b", "\u2800", "\u3164", "\u2060\ufeff\t"}
	items := []writer.Input{{Kind: memorykit.KindFact, Key: "shown", Content: "a visible fact"}}
	for i, c := range blanks {
		items = append(items, writer.Input{Kind: memorykit.KindFact, Key: "blank " + string(rune('a'+i)), Content: c})
	}
	res, err := s.Import(ctx, items)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if res[0].Outcome != mkruntime.ImportStored {
		t.Fatalf("visible item = %+v", res[0])
	}
	for i, r := range res[1:] {
		if r.Outcome != mkruntime.ImportRejected || r.Field != "content" || r.Reason != "blank" {
			t.Errorf("blank item %+q = %+v, want rejected content/blank", blanks[i], r)
		}
	}
	for _, c := range blanks {
		_, err := s.Remember(ctx, writer.Input{Kind: memorykit.KindFact, Key: "remembered blank", Content: c})
		if me := testkit.WantKind(t, err, memorykit.ErrInvalidInput); me.Reason != "blank" {
			t.Fatalf("Remember(%+q): reason %q, want blank", c, me.Reason)
		}
	}
	if _, err := b.store.FindActive(ctx, b.scope, memorykit.KindFact, "remembered blank"); !errors.Is(err, memorykit.ErrNotFound) {
		t.Fatalf("a blank Remember stored something: %v", err)
	}
}
