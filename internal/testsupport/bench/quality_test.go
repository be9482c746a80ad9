package bench

import (
	"reflect"
	"testing"

	"github.com/goagents/memorykit/storekit"
)

// qualityShape is the conversation NewQualitySet builds for the recall
// quality evaluation (devsets_test.go): 12 sessions of 60 turns.
const (
	qualitySessions = 12
	qualityTurns    = 60
)

func hitIDs(hits []storekit.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// TestQualitySetIsDeterministic checks the generator: the same seed gives
// the same conversation, every question's answer states a fact, and both
// languages are present.
func TestQualitySetIsDeterministic(t *testing.T) {
	a, b := NewQualitySet(1, qualitySessions, qualityTurns), NewQualitySet(1, qualitySessions, qualityTurns)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed built two different sets")
	}
	if c := NewQualitySet(2, qualitySessions, qualityTurns); reflect.DeepEqual(a, c) {
		t.Fatal("another seed built the same set")
	}
	if len(a.Turns) != qualitySessions*qualityTurns {
		t.Fatalf("%d turns", len(a.Turns))
	}
	zh := 0
	for _, q := range a.Questions {
		if q.Chinese {
			zh++
		}
		if q.Answer < 0 || q.Answer >= len(a.Turns) || a.Turns[q.Answer].Content == "" {
			t.Fatalf("question %q has no answer turn", q.Text)
		}
	}
	if zh == 0 || zh == len(a.Questions) {
		t.Fatalf("%d of %d questions are Chinese", zh, len(a.Questions))
	}
}
