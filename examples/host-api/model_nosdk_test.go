//go:build !sdk

package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestModelWithoutSDKs: a build without -tags sdk runs the scripted model
// and refuses -model openai|anthropic with a sentence that says how to get
// them, before it opens a store or a port.
func TestModelWithoutSDKs(t *testing.T) {
	t.Setenv(envAnthropicKey, modelKey)
	for _, kind := range []string{modelOpenAI, modelAnthropic} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"-model", kind, "-model-name", "m", "-memory"}, &out, &errOut); code != 2 {
			t.Errorf("%s: exit %d, want 2", kind, code)
		}
		if msg := errOut.String(); !strings.Contains(msg, "built without model SDKs") || !strings.Contains(msg, "-tags sdk") || strings.Contains(msg, modelKey) {
			t.Errorf("%s: stderr %q", kind, msg)
		}
		cfg := modelConfig{kind: kind, name: "m"}
		if r, err := newTurnRunner(cfg, func(string) string { return modelKey }, nil); r != nil || !errors.Is(err, errNoSDK) {
			t.Errorf("%s turn runner: %v, %v", kind, r, err)
		}
		if m, err := newExtractionModel(cfg, func(string) string { return modelKey }, nil); m != nil || !errors.Is(err, errNoSDK) {
			t.Errorf("%s extraction model: %v, %v", kind, m, err)
		}
	}
	// The scripted model needs no SDK.
	if r, err := newTurnRunner(modelConfig{kind: modelScripted}, func(string) string { return "" }, nil); r != nil || err != nil {
		t.Errorf("scripted: %v, %v", r, err)
	}
	if m, err := newExtractionModel(modelConfig{}, func(string) string { return "" }, nil); m != nil || err != nil {
		t.Errorf("scripted extraction model: %v, %v", m, err)
	}
	// Flag mistakes are still reported as such.
	if _, err := newTurnRunner(modelConfig{kind: modelOpenAI}, func(string) string { return "" }, nil); err == nil || errors.Is(err, errNoSDK) {
		t.Errorf("no model name: %v", err)
	}
	var out, errOut bytes.Buffer
	run(context.Background(), []string{"-help"}, &out, &errOut)
	if !strings.Contains(errOut.String()+out.String(), "need a build with -tags sdk") {
		t.Error("-help does not say how to get the real models")
	}
}
