//go:build !sdk

package main

import (
	"net/http"

	"github.com/goagents/memorykit/extraction"
)

// This file stands in for model_sdk.go in a build without -tags sdk: the
// scripted model runs, and -model openai|anthropic is refused with a
// sentence that says how to get them.

// builtWithSDKs reports whether -model openai|anthropic can run.
const builtWithSDKs = false

// errNoSDK is the answer to -model openai|anthropic in this build.
var errNoSDK = noSDKError{}

type noSDKError struct{}

func (noSDKError) Error() string {
	return "this binary was built without model SDKs: rebuild with -tags sdk (go run -tags sdk . -model …) to use -model openai or anthropic"
}

// newTurnRunner checks cfg and returns nil for the scripted model; a real
// model is errNoSDK.
func newTurnRunner(cfg modelConfig, getenv func(string) string, _ *http.Client) (TurnRunner, error) {
	if real, err := checkModelConfig(cfg, getenv); !real || err != nil {
		return nil, err
	}
	return nil, errNoSDK
}

// newExtractionModel is newTurnRunner's twin for extraction.
func newExtractionModel(cfg modelConfig, getenv func(string) string, _ *http.Client) (extraction.Model, error) {
	if real, err := checkModelConfig(cfg, getenv); !real || err != nil {
		return nil, err
	}
	return nil, errNoSDK
}
