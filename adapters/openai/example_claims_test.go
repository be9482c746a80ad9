package openai_test

import (
	"time"

	"github.com/benbjohnson/clock"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/goagents/memorykit"
	mkopenai "github.com/goagents/memorykit/adapters/openai"
	"github.com/goagents/memorykit/memorytools"
	mkruntime "github.com/goagents/memorykit/runtime"
)

// A Host adds a model-judged claim check after the built-in rules: after a
// failed write, an answer is rejected when either one reads a claim.
func ExampleNewClaimDetector() {
	client := oai.NewClient(option.WithAPIKey("sk-..."), option.WithMaxRetries(0))
	judge, err := mkopenai.NewClaimDetector(mkopenai.ClaimDetectorConfig{
		Client:       &client,
		Model:        "gpt-4o-mini",
		Timeout:      3 * time.Second,
		MaxTextBytes: 16 << 10,
		Clock:        clock.New(),
		Events:       memorykit.DiscardEvents{},
	})
	if err != nil {
		panic(err)
	}
	var cfg mkruntime.Config // the rest of the Host's Config
	cfg.Claims = memorytools.AnyClaim(memorytools.DefaultClaimDetector(), judge)
	_ = cfg
}
