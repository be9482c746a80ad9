package embedder_test

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit/embedder"
)

func cosine(a, b []float32) float64 {
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i]) // Local vectors have unit length
	}
	return dot
}

// The local embedder needs no network and gives the same vector for the
// same text everywhere. Texts that share words score higher.
func ExampleNewLocal() {
	e := embedder.NewLocal()
	vs, err := e.Embed(context.Background(), []string{
		"Database migrations run before every release",
		"Run the database migrations before the release",
		"The cafeteria serves soup on Mondays",
	})
	if err != nil {
		fmt.Println("embed failed:", err)
		return
	}
	fmt.Println(e.Profile(), e.Dimension(), len(vs))
	fmt.Printf("paraphrase %.2f\n", cosine(vs[0], vs[1]))
	fmt.Printf("unrelated  %.2f\n", math.Abs(cosine(vs[0], vs[2])))
	// Output:
	// memorykit/hash-v1 384 3
	// paraphrase 0.86
	// unrelated  0.02
}

// An OpenAI-compatible provider. Every field except APIKey, SendDimensions
// and HTTPClient is required; the timeout is measured on the given clock.
func ExampleNewOpenAI() {
	e, err := embedder.NewOpenAI(embedder.OpenAIConfig{
		BaseURL:        "https://api.openai.com",
		APIKey:         "sk-...", // from the Host's secret store
		Model:          "text-embedding-3-small",
		Profile:        "openai/text-embedding-3-small@512",
		Dimension:      512,
		SendDimensions: true,
		MaxBatch:       128,
		Timeout:        10 * time.Second,
		Clock:          clock.New(),
	})
	if err != nil {
		fmt.Println(err) // a typed, content-free *memorykit.Error
		return
	}
	defer e.CloseIdleConnections()
	fmt.Println(e.Profile(), e.Dimension())
	// Output:
	// openai/text-embedding-3-small@512 512
}
