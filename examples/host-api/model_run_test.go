package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

const (
	modelKey    = "sk-host-test-KEYCANARY"
	modelCanary = "PROVIDERCANARY-51d0"
)

func TestModelFlags(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"unknown model", []string{"-model", "gpt-magic", "-model-name", "m"}, nil},
		{"no model name", []string{"-model", "openai"}, nil},
		{"anthropic without key", []string{"-model", "anthropic", "-model-name", "m"}, nil},
		{"scripted with a server", []string{"-model-url", "http://127.0.0.1:1/v1/"}, nil},
		{"no key flag exists", []string{"-model", "openai", "-model-name", "m", "-model-key", modelKey}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var out, errOut bytes.Buffer
			if code := run(context.Background(), c.args, &out, &errOut); code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errOut.String())
			}
			if strings.Contains(errOut.String()+out.String(), modelKey) {
				t.Error("the key was printed")
			}
		})
	}
	// A key in the environment is never printed, not even by -help.
	t.Setenv(envOpenAIKey, modelKey)
	var out, errOut bytes.Buffer
	run(context.Background(), []string{"-help"}, &out, &errOut)
	if strings.Contains(errOut.String()+out.String(), modelKey) {
		t.Error("-help printed the key")
	}
}
