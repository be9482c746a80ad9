package main

import (
	"context"
	"testing"

	"github.com/goagents/memorykit"
)

// TestSecretPolicyCoversEveryField: a credential is refused in every
// content-bearing field of a write, metadata keys and source kinds
// included, and the same write without it passes.
func TestSecretPolicyCoversEveryField(t *testing.T) {
	const key = "sk-abcdefghijklmnopqrstuvwx"
	base := func() memorykit.ContentCheck {
		return memorykit.ContentCheck{
			Action: memorykit.ActionCreate, Kind: memorykit.KindFact, Key: "deploy region", Content: "eu-west-1",
			Metadata: map[string]string{"lang": "en"}, Sources: []memorykit.Source{{Kind: "chat", Ref: "run-1"}},
		}
	}
	if err := (secretPolicy{}).ValidateContent(context.Background(), base()); err != nil {
		t.Fatalf("clean write refused: %v", err)
	}
	for name, plant := range map[string]func(*memorykit.ContentCheck){
		"key":            func(c *memorykit.ContentCheck) { c.Key = key },
		"content":        func(c *memorykit.ContentCheck) { c.Content = "use " + key },
		"reason":         func(c *memorykit.ContentCheck) { c.Reason = key },
		"metadata key":   func(c *memorykit.ContentCheck) { c.Metadata = map[string]string{key: "x"} },
		"metadata value": func(c *memorykit.ContentCheck) { c.Metadata = map[string]string{"token": key} },
		"source kind":    func(c *memorykit.ContentCheck) { c.Sources[0].Kind = key },
		"source ref":     func(c *memorykit.ContentCheck) { c.Sources[0].Ref = key },
	} {
		c := base()
		plant(&c)
		if err := (secretPolicy{}).ValidateContent(context.Background(), c); err == nil {
			t.Errorf("a credential in the %s passed", name)
		}
	}
}
