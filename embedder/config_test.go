package embedder

import (
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/goagents/memorykit"
)

func wantConfigError(t *testing.T, err error, field string) {
	t.Helper()
	var me *memorykit.Error
	if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrInvalidConfig) || me.Field != field || memorykit.IsRecoverable(err) {
		t.Fatalf("err = %v; want ErrInvalidConfig for field %s", err, field)
	}
}

func validOpenAI() OpenAIConfig {
	return OpenAIConfig{
		BaseURL: "https://api.example.com", APIKey: "sk-abc", Model: "text-embedding-3-small",
		Profile: "openai/text-embedding-3-small@1536", Dimension: 1536, MaxBatch: 64,
		Timeout: 10 * time.Second, Clock: clock.NewMock(),
	}
}

func validOllama() OllamaConfig {
	return OllamaConfig{
		BaseURL: "http://localhost:11434", Model: "nomic-embed-text",
		Profile: "ollama/nomic-embed-text@768", Dimension: 768, MaxBatch: 32,
		Timeout: 10 * time.Second, Clock: clock.NewMock(),
	}
}

func TestOpenAIConfigValidation(t *testing.T) {
	t.Parallel()
	if _, err := NewOpenAI(validOpenAI()); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	cases := []struct {
		name  string
		edit  func(*OpenAIConfig)
		field string
	}{
		{"no clock", func(c *OpenAIConfig) { c.Clock = nil }, "clock"},
		{"no timeout", func(c *OpenAIConfig) { c.Timeout = 0 }, "timeout"},
		{"negative timeout", func(c *OpenAIConfig) { c.Timeout = -time.Second }, "timeout"},
		{"no profile", func(c *OpenAIConfig) { c.Profile = "" }, "profile"},
		{"bad profile", func(c *OpenAIConfig) { c.Profile = "openai model" }, "profile"},
		{"no dimension", func(c *OpenAIConfig) { c.Dimension = 0 }, "dimension"},
		{"huge dimension", func(c *OpenAIConfig) { c.Dimension = MaxDimension + 1 }, "dimension"},
		{"no batch", func(c *OpenAIConfig) { c.MaxBatch = 0 }, "max_batch"},
		{"huge batch", func(c *OpenAIConfig) { c.MaxBatch = MaxBatchLimit + 1 }, "max_batch"},
		{"no model", func(c *OpenAIConfig) { c.Model = "" }, "model"},
		{"blank model", func(c *OpenAIConfig) { c.Model = "  " }, "model"},
		{"control in model", func(c *OpenAIConfig) { c.Model = "m\n" }, "model"},
		{"key with newline", func(c *OpenAIConfig) { c.APIKey = "sk\r\nX-Evil: 1" }, "api_key"},
		{"key with space", func(c *OpenAIConfig) { c.APIKey = "sk abc" }, "api_key"},
		{"no base url", func(c *OpenAIConfig) { c.BaseURL = "" }, "base_url"},
		{"relative base url", func(c *OpenAIConfig) { c.BaseURL = "api.example.com" }, "base_url"},
		{"ftp base url", func(c *OpenAIConfig) { c.BaseURL = "ftp://api.example.com" }, "base_url"},
		{"credentials in url", func(c *OpenAIConfig) { c.BaseURL = "https://user:pw@api.example.com" }, "base_url"},
		{"query in url", func(c *OpenAIConfig) { c.BaseURL = "https://api.example.com?key=1" }, "base_url"},
		{"fragment in url", func(c *OpenAIConfig) { c.BaseURL = "https://api.example.com#x" }, "base_url"},
		{"url already has /v1", func(c *OpenAIConfig) { c.BaseURL = "https://api.example.com/v1/" }, "base_url"},
		{"unparsable url", func(c *OpenAIConfig) { c.BaseURL = "https://[::1" }, "base_url"},
	}
	for _, c := range cases {
		cfg := validOpenAI()
		c.edit(&cfg)
		e, err := NewOpenAI(cfg)
		if e != nil {
			t.Errorf("%s: got an embedder", c.name)
		}
		wantConfigError(t, err, c.field)
	}
}

func TestOllamaConfigValidation(t *testing.T) {
	t.Parallel()
	e, err := NewOllama(validOllama())
	if err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if e.Profile() != "ollama/nomic-embed-text@768" || e.Dimension() != 768 {
		t.Fatalf("profile %q dimension %d", e.Profile(), e.Dimension())
	}
	cases := []struct {
		name  string
		edit  func(*OllamaConfig)
		field string
	}{
		{"no clock", func(c *OllamaConfig) { c.Clock = nil }, "clock"},
		{"no timeout", func(c *OllamaConfig) { c.Timeout = 0 }, "timeout"},
		{"no profile", func(c *OllamaConfig) { c.Profile = "" }, "profile"},
		{"no dimension", func(c *OllamaConfig) { c.Dimension = -1 }, "dimension"},
		{"no batch", func(c *OllamaConfig) { c.MaxBatch = 0 }, "max_batch"},
		{"no model", func(c *OllamaConfig) { c.Model = "" }, "model"},
		{"no base url", func(c *OllamaConfig) { c.BaseURL = "" }, "base_url"},
		{"url already has /api", func(c *OllamaConfig) { c.BaseURL = "http://localhost:11434/api" }, "base_url"},
	}
	for _, c := range cases {
		cfg := validOllama()
		c.edit(&cfg)
		e, err := NewOllama(cfg)
		if e != nil {
			t.Errorf("%s: got an embedder", c.name)
		}
		wantConfigError(t, err, c.field)
	}
}
