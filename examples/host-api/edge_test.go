package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The HTTP edge's regression tests for hole 9 of issue 10, one per defect,
// each run against the Host on both stores over real HTTP.

func TestHostEdgeEmbedded(t *testing.T) { runEdge(t, memoryBackend) }

func TestHostEdgePostgres(t *testing.T) { runEdge(t, postgresBackend(t)) }

func runEdge(t *testing.T, b backend) {
	t.Run("InvalidUTF8Is422", func(t *testing.T) { testInvalidUTF8(t, newEnv(t, b, nil)) })
	t.Run("DuplicateAndCaseFoldedKeysAre400", func(t *testing.T) { testDuplicateKeys(t, newEnv(t, b, nil)) })
	t.Run("QueryStringParsedStrictly", func(t *testing.T) { testStrictQuery(t, newEnv(t, b, nil)) })
	t.Run("UnroutedAnswersAreJSON", func(t *testing.T) { testUnroutedJSON(t, newEnv(t, b, nil)) })
	t.Run("InvalidLimitIsAlways422", func(t *testing.T) { testLimitOneCode(t, newEnv(t, b, nil)) })
	t.Run("BlankContentAndMessagesAre422", func(t *testing.T) { testBlankText(t, newEnv(t, b, nil)) })
	t.Run("ZeroEffectiveTimeIs422", func(t *testing.T) { testZeroEffectiveTime(t, newEnv(t, b, nil)) })
}

type edgeCase struct {
	method, path, body string
	status             int
	code, reason       string
}

// expectRejected sends each case and checks status, JSON error code and
// reason, and that the store did not change.
func expectRejected(t *testing.T, e *env, cases []edgeCase) {
	t.Helper()
	e.settle() // no background write may land between the two dumps
	before := e.dump()
	for _, c := range cases {
		r := e.do(aliceToken, c.method, c.path, c.body)
		if r.status != c.status || r.str("error") != c.code || (c.reason != "" && r.str("reason") != c.reason) {
			t.Errorf("%s %.80q body %.80q: %d %s, want %d %s/%s", c.method, c.path, c.body, r.status, r.raw, c.status, c.code, c.reason)
		}
	}
	if after := e.dump(); after != before {
		t.Errorf("a rejected request changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func testInvalidUTF8(t *testing.T, e *env) {
	id := e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1.")
	var cases []edgeCase
	for _, body := range []string{
		"{\"kind\":\"note\",\"key\":\"k\",\"content\":\"bad \xff byte\"}",
		"{\"kind\":\"note\",\"key\":\"k\xc3\",\"content\":\"c\"}",
		`{"kind":"note","key":"k","content":"lone \ud800 high half"}`,
		`{"kind":"note","key":"k","content":"lone \udc00 low half"}`,
		`{"kind":"note","key":"k","content":"c","metadata":{"team":"\ud83d"}}`,
	} {
		cases = append(cases, edgeCase{"POST", apollo + "/memories", body, http.StatusUnprocessableEntity, "invalid_input", "invalid_utf8"})
	}
	cases = append(cases,
		edgeCase{"POST", apollo + "/memories/" + id + "/correct", "{\"content\":\"\xfe\"}", http.StatusUnprocessableEntity, "invalid_input", "invalid_utf8"},
		edgeCase{"POST", apollo + "/search", "{\"query\":\"\xc0\xaf\"}", http.StatusUnprocessableEntity, "invalid_input", "invalid_utf8"},
		edgeCase{"POST", apollo + "/chat", "{\"message\":\"hi \xff\"}", http.StatusUnprocessableEntity, "invalid_input", "invalid_utf8"},
	)
	expectRejected(t, e, cases)
	// A proper surrogate pair is fine.
	r := e.must(http.StatusCreated, aliceToken, "POST", apollo+"/memories", `{"kind":"note","key":"emoji","content":"ship it \ud83d\ude80"}`)
	if r.str("memory.content") != "ship it \U0001F680" {
		t.Errorf("surrogate pair: %s", r.raw)
	}
}

func testDuplicateKeys(t *testing.T, e *env) {
	id := e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1.")
	var cases []edgeCase
	for _, c := range []struct{ body, reason string }{
		{`{"kind":"note","key":"k","content":"a","CONTENT":"b"}`, "unknown_field"},
		{`{"kind":"note","key":"k","content":"a","content":"b"}`, "duplicate_key"},
		{`{"kind":"note","\u212aey":"k","content":"c"}`, "unknown_field"},
		{`{"Kind":"note","key":"k","content":"c"}`, "unknown_field"},
		{`{"kind":"note","key":"k","content":"c","metadata":{"team":"a","team":"b"}}`, "duplicate_key"},
		{`{"kind":"note","key":"k","content":"c","sources":[{"KIND":"ticket","ref":"r"}]}`, "unknown_field"},
		{`{"kind":"note","key":"k","content":"c","sources":[{"kind":"ticket","ref":"r","ref":"s"}]}`, "duplicate_key"},
	} {
		cases = append(cases, edgeCase{"POST", apollo + "/memories", c.body, http.StatusBadRequest, "invalid_json", c.reason})
	}
	cases = append(cases,
		edgeCase{"POST", apollo + "/memories/" + id + "/correct", `{"content":"a","Content":"b"}`, http.StatusBadRequest, "invalid_json", "unknown_field"},
		edgeCase{"POST", apollo + "/memories/" + id + "/forget", `{"reason":"a","reason":"b"}`, http.StatusBadRequest, "invalid_json", "duplicate_key"},
		edgeCase{"POST", apollo + "/search", `{"query":"a","QUERY":"b"}`, http.StatusBadRequest, "invalid_json", "unknown_field"},
		edgeCase{"POST", apollo + "/chat", `{"message":"a","message":"b"}`, http.StatusBadRequest, "invalid_json", "duplicate_key"},
		edgeCase{"POST", apollo + "/chat", `{"message":"a","history":[{"role":"user","Content":"x"}]}`, http.StatusBadRequest, "invalid_json", "unknown_field"},
	)
	expectRejected(t, e, cases)
}

func testStrictQuery(t *testing.T, e *env) {
	e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1.")
	many := strings.Repeat("limit=1&", 10001) + "tenant=globex"
	expectRejected(t, e, []edgeCase{
		{"GET", apollo + "/candidates?limit=1;tenant=globex", "", http.StatusBadRequest, "invalid_query", "malformed"},
		{"GET", apollo + "/candidates?tenant=globex;limit=1", "", http.StatusBadRequest, "invalid_query", "malformed"},
		{"GET", apollo + "/candidates?" + many, "", http.StatusBadRequest, "invalid_query", "too_many_parameters"},
		{"GET", apollo + "/candidates?" + strings.Repeat("a=1&", 20) + "tenant=globex", "", http.StatusBadRequest, "invalid_query", "too_many_parameters"},
		{"GET", apollo + "/candidates?limit=%zz&tenant=globex", "", http.StatusBadRequest, "invalid_query", "malformed"},
		{"POST", apollo + "/memories?x=1;tenant=globex", `{"kind":"note","key":"k","content":"c"}`, http.StatusBadRequest, "invalid_query", "malformed"},
	})
}

func testUnroutedJSON(t *testing.T, e *env) {
	for _, c := range []edgeCase{
		{"GET", "/nope", "", http.StatusNotFound, "not_found", "no_route"},
		{"GET", "/v1/projects/apollo/nothing", "", http.StatusNotFound, "not_found", "no_route"},
		{"DELETE", apollo + "/memories/mem_x", "", http.StatusMethodNotAllowed, "method_not_allowed", ""},
		{"POST", apollo + "/candidates", "", http.StatusMethodNotAllowed, "method_not_allowed", ""},
	} {
		r := e.do(aliceToken, c.method, c.path, c.body)
		if r.status != c.status || r.str("error") != c.code || r.str("reason") != c.reason {
			t.Errorf("%s %s: %d %s, want %d %s/%s", c.method, c.path, r.status, r.raw, c.status, c.code, c.reason)
		}
	}
	// Paths the mux would redirect, sent as they are (an HTTP client may
	// clean them first).
	for _, path := range []string{"/v1/projects/apollo/../hermes/candidates", "/v1/projects/apollo//candidates", "/v1/projects/./apollo/candidates"} {
		status, ct, body := rawGet(t, e, path)
		if status != http.StatusBadRequest || !strings.HasPrefix(ct, "application/json") || !strings.Contains(body, `"error":"invalid_path"`) {
			t.Errorf("GET %s: %d %s %s", path, status, ct, body)
		}
	}
	req, err := http.NewRequest("POST", e.srv.URL+apollo+"/candidates", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || res.Header.Get("Allow") == "" {
		t.Errorf("405: Content-Type %q Allow %q", ct, res.Header.Get("Allow"))
	}
}

func testLimitOneCode(t *testing.T, e *env) {
	var cases []edgeCase
	for _, q := range []string{"limit=abc", "limit=0", "limit=-1", "limit=101", "limit=1e3", "after=bad%20id"} {
		cases = append(cases, edgeCase{"GET", apollo + "/candidates?" + q, "", http.StatusUnprocessableEntity, "invalid_input", ""})
	}
	expectRejected(t, e, cases)
}

func testBlankText(t *testing.T, e *env) {
	id := e.write(aliceToken, "apollo", "fact", "deploy region", "The API runs in eu-west-1.")
	var cases []edgeCase
	for _, blank := range []string{" ", `   \t\n\r `, `\u3000\u00a0`, `\u200b \u2060`} {
		cases = append(cases,
			edgeCase{"POST", apollo + "/memories", `{"kind":"note","key":"k","content":"` + blank + `"}`, http.StatusUnprocessableEntity, "invalid_input", "blank"},
			edgeCase{"POST", apollo + "/memories/" + id + "/correct", `{"content":"` + blank + `"}`, http.StatusUnprocessableEntity, "invalid_input", "blank"},
			edgeCase{"POST", apollo + "/chat", `{"message":"` + blank + `"}`, http.StatusUnprocessableEntity, "invalid_input", "blank"},
			edgeCase{"POST", apollo + "/chat", `{"message":"hi","history":[{"role":"user","content":"` + blank + `"}]}`, http.StatusUnprocessableEntity, "invalid_input", "blank"},
			edgeCase{"POST", apollo + "/search", `{"query":"` + blank + `"}`, http.StatusUnprocessableEntity, "invalid_input", "blank"},
		)
	}
	expectRejected(t, e, cases)
	r := e.do(aliceToken, "POST", apollo+"/memories", `{"kind":"note","key":"k","content":"  "}`)
	if r.str("message") == "" || r.str("field") != "content" {
		t.Errorf("a refused write must say it was not saved: %s", r.raw)
	}
}

func testZeroEffectiveTime(t *testing.T, e *env) {
	expectRejected(t, e, []edgeCase{
		{"POST", apollo + "/memories", `{"kind":"note","key":"k","content":"c","effective_from":"0001-01-01T00:00:00Z"}`, http.StatusUnprocessableEntity, "invalid_input", "zero_time"},
		{"POST", apollo + "/memories", `{"kind":"note","key":"k","content":"c","effective_until":"0001-01-01T00:00:00Z"}`, http.StatusUnprocessableEntity, "invalid_input", "zero_time"},
	})
	r := e.do(aliceToken, "POST", apollo+"/memories", `{"kind":"note","key":"k","content":"c","effective_from":"0001-01-01T00:00:00Z"}`)
	if r.str("field") != "effective_from" {
		t.Errorf("zero effective_from: %s", r.raw)
	}
	// A real instant is kept as given.
	r = e.must(http.StatusCreated, aliceToken, "POST", apollo+"/memories", `{"kind":"note","key":"k","content":"c","effective_from":"2026-02-01T00:00:00Z"}`)
	if r.str("memory.effective_from") != "2026-02-01T00:00:00Z" {
		t.Errorf("effective_from: %s", r.raw)
	}
}

// rawGet sends one GET with the request target exactly as given.
func rawGet(t *testing.T, e *env, target string) (status int, contentType, body string) {
	t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", target, aliceToken)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), string(raw)
}
