package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/extraction"
	"github.com/goagents/memorykit/storekit"
)

// ExtractionCase is one labelled transcript of the extraction set: a short
// finished turn and the memories a good extraction proposes from it (none
// for small talk).
type ExtractionCase struct {
	ID         string       `json:"id"`
	Transcript string       `json:"transcript"`
	Facts      []GoldMemory `json:"facts"`
}

// GoldMemory is one memory the set expects.
type GoldMemory struct {
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	Content string `json:"content"`
}

// LoadExtractionSet reads every *.json file of dir (testdata/extraction),
// in name order.
func LoadExtractionSet(dir string) ([]ExtractionCase, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []ExtractionCase
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var cs []ExtractionCase
		if err := json.Unmarshal(raw, &cs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, cs...)
	}
	return out, nil
}

// ExtractionScore is how an extractor did on a set, by language (the
// case ID's prefix) and in all.
type ExtractionScore struct {
	ByLang map[string]*PR
	All    PR
	// Failed counts cases whose extraction returned an error.
	Failed int
}

// PR counts matches for precision and recall.
type PR struct {
	Proposed, Gold, Matched int
}

// Precision is matched / proposed (1 with no proposal).
func (p PR) Precision() float64 {
	if p.Proposed == 0 {
		return 1
	}
	return float64(p.Matched) / float64(p.Proposed)
}

// Recall is matched / gold (1 with no gold memory).
func (p PR) Recall() float64 {
	if p.Gold == 0 {
		return 1
	}
	return float64(p.Matched) / float64(p.Gold)
}

func (p *PR) add(q PR) { p.Proposed += q.Proposed; p.Gold += q.Gold; p.Matched += q.Matched }

// String renders the counts and ratios.
func (p PR) String() string {
	return fmt.Sprintf("precision %.2f (%d/%d) recall %.2f (%d/%d)",
		p.Precision(), p.Matched, p.Proposed, p.Recall(), p.Matched, p.Gold)
}

// Report renders the score, one line per language and one for all.
func (s ExtractionScore) Report() string {
	langs := make([]string, 0, len(s.ByLang))
	for l := range s.ByLang {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	var b strings.Builder
	for _, l := range langs {
		fmt.Fprintf(&b, "%s: %s\n", l, s.ByLang[l])
	}
	fmt.Fprintf(&b, "all: %s; failed cases %d\n", s.All, s.Failed)
	return b.String()
}

// MatchOverlap is the share of a gold memory's search terms a proposal's
// key and content must hold to match it when the canonical keys differ.
const MatchOverlap = 0.5

// Matches reports whether proposal p finds gold memory g: the same
// canonical key, or p's key and content holding at least MatchOverlap of
// g's content terms (storekit.SearchTerms, so Chinese and Japanese
// compare by two-character grams).
func Matches(p memorykit.Proposal, g GoldMemory) bool {
	if storekit.NormalizeKey(p.Key) == storekit.NormalizeKey(g.Key) {
		return true
	}
	want := storekit.SearchTerms(g.Content, 64)
	if len(want) == 0 {
		return false
	}
	have := map[string]bool{}
	for _, t := range storekit.SearchTerms(p.Key+" "+p.Content, 256) {
		have[t] = true
	}
	hit := 0
	for _, t := range want {
		if have[t] {
			hit++
		}
	}
	return float64(hit) >= MatchOverlap*float64(len(want))
}

// ScoreCase matches proposals to gold memories one to one, greedily in
// order.
func ScoreCase(ps []memorykit.Proposal, gold []GoldMemory) PR {
	used := make([]bool, len(gold))
	pr := PR{Proposed: len(ps), Gold: len(gold)}
	for _, p := range ps {
		for i, g := range gold {
			if !used[i] && Matches(p, g) {
				used[i] = true
				pr.Matched++
				break
			}
		}
	}
	return pr
}

// ScoreExtractor runs x on every case (as a job of scope) and scores its
// proposals.
func ScoreExtractor(ctx context.Context, x memorykit.Extractor, scope memorykit.Scope, cases []ExtractionCase) ExtractionScore {
	s := ExtractionScore{ByLang: map[string]*PR{}}
	for i, c := range cases {
		ps, err := x.Extract(ctx, memorykit.ExtractionInput{
			JobID: fmt.Sprintf("job_bench_%d", i), Scope: scope, RunRef: c.ID, Payload: c.Transcript, Attempt: 1,
		})
		pr := PR{Gold: len(c.Facts)}
		if err != nil {
			s.Failed++
		} else {
			pr = ScoreCase(ps, c.Facts)
		}
		lang := strings.TrimRight(c.ID, "0123456789")
		if s.ByLang[lang] == nil {
			s.ByLang[lang] = &PR{}
		}
		s.ByLang[lang].add(pr)
		s.All.add(pr)
	}
	return s
}

// Environment variables of an OpenAI-compatible extraction endpoint.
const (
	// EnvExtractURL is the API base URL, such as https://api.openai.com/v1.
	EnvExtractURL = "MEMORYKIT_EXTRACT_URL"
	// EnvExtractModel is the model name.
	EnvExtractModel = "MEMORYKIT_EXTRACT_MODEL"
	// EnvExtractKey is the bearer key (may be empty for a local server).
	EnvExtractKey = "MEMORYKIT_EXTRACT_KEY"
)

// ChatModel is an extraction.Model on an OpenAI-compatible chat
// completions endpoint, with strict json_schema output, over net/http.
// It exists for the benchmark; production Hosts use the adapter modules.
type ChatModel struct {
	// BaseURL is the API base (".../v1"); the call posts to
	// BaseURL + "/chat/completions".
	BaseURL string
	Model   string
	Key     string
	Client  *http.Client
	// MaxBodyBytes bounds the response body read.
	MaxBodyBytes int64
}

// Generate implements extraction.Model.
func (m ChatModel) Generate(ctx context.Context, req extraction.Request) (extraction.Response, error) {
	const op = "bench.chat_model"
	body, err := json.Marshal(map[string]any{
		"model": m.Model,
		"messages": []map[string]string{
			{"role": "system", "content": req.Instructions},
			{"role": "user", "content": req.Input},
		},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": req.SchemaName, "strict": true, "schema": req.Schema,
		}},
		"max_completion_tokens": req.MaxOutputTokens,
	})
	if err != nil {
		return extraction.Response{}, memorykit.WrapError(op, memorykit.ErrInvalidInput, "request_encode", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(m.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return extraction.Response{}, memorykit.WrapError(op, memorykit.ErrInvalidConfig, "bad_url", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if m.Key != "" {
		hr.Header.Set("Authorization", "Bearer "+m.Key)
	}
	client := m.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return extraction.Response{}, memorykit.WrapError(op, memorykit.ErrUnavailable, "context_done", ctx.Err())
		}
		return extraction.Response{}, &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_unreachable", Retry: true}
	}
	defer resp.Body.Close()
	limit := m.MaxBodyBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return extraction.Response{}, &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_read", Retry: true}
	}
	if resp.StatusCode != http.StatusOK {
		e := &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_status_" + strconv.Itoa(resp.StatusCode)}
		if resp.StatusCode == 408 || resp.StatusCode == 409 || resp.StatusCode == 429 || resp.StatusCode >= 500 {
			e.Retry = true
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				e.RetryAfter = time.Duration(s) * time.Second
			}
		}
		return extraction.Response{}, e
	}
	if int64(len(raw)) > limit {
		return extraction.Response{}, &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_answer_too_large", Retry: true}
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 || out.Choices[0].Message.Content == nil ||
		out.Choices[0].Message.Refusal != nil {
		return extraction.Response{}, &memorykit.Error{Op: op, Kind: memorykit.ErrUnavailable, Reason: "provider_bad_response", Retry: true}
	}
	return extraction.Response{
		JSON:  []byte(*out.Choices[0].Message.Content),
		Usage: extraction.Usage{InputTokens: out.Usage.PromptTokens, OutputTokens: out.Usage.CompletionTokens},
	}, nil
}

// ChatModelFromEnv returns the ChatModel the environment names, and false
// when EnvExtractURL or EnvExtractModel is unset.
func ChatModelFromEnv(getenv func(string) string) (ChatModel, bool) {
	m := ChatModel{BaseURL: getenv(EnvExtractURL), Model: getenv(EnvExtractModel), Key: getenv(EnvExtractKey),
		Client: &http.Client{Timeout: 2 * time.Minute}}
	return m, m.BaseURL != "" && m.Model != ""
}
