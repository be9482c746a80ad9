package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// TestFairEdgeShareBetweenTenants: a lone tenant may use every slot of a
// class; once another tenant is active, a tenant holding its fair share
// (slots / active tenants) is refused while the other still gets a slot,
// and a tenant that has been quiet for fairWindow no longer counts.
func TestFairEdgeShareBetweenTenants(t *testing.T) {
	clk := clock.NewMock()
	c := newEdge(overloadLimits{EdgeReads: 4, EdgeWrites: 1, EdgeChats: 1}, clk)[classReads]

	// Alone, the storm tenant takes all four slots; the fifth is refused.
	for i := range 4 {
		if !c.enter("storm") {
			t.Fatalf("lone tenant refused slot %d", i)
		}
	}
	if c.enter("storm") || !c.full() {
		t.Fatal("a full class admitted a request")
	}
	// A quiet tenant arrives: the class is full, so it is refused too, but
	// it is now active. As the storm's requests end, the storm may hold
	// only half the slots, so the freed ones wait for the quiet tenant.
	if c.enter("quiet") {
		t.Fatal("a full class admitted the quiet tenant")
	}
	c.leave("storm")
	c.leave("storm")
	if c.enter("storm") {
		t.Fatal("the storm took more than its share while another tenant is active")
	}
	for i := range 2 {
		if !c.enter("quiet") {
			t.Fatalf("the quiet tenant did not get slot %d of its share", i)
		}
	}
	if c.enter("quiet") || !c.full() {
		t.Fatal("a full class admitted a request")
	}
	if got := c.unfair.Load(); got != 1 {
		t.Fatalf("unfair refusals %d, want 1 (the storm's)", got)
	}
	// The quiet tenant finishes and stays quiet for fairWindow: the storm
	// is alone again and may use the whole class.
	c.leave("quiet")
	c.leave("quiet")
	clk.Add(fairWindow)
	for i := range 2 {
		if !c.enter("storm") {
			t.Fatalf("a lone tenant was held to a share after the other went quiet (slot %d)", i)
		}
	}
	for range 4 {
		c.leave("storm")
	}
	if c.running != 0 || c.tenants["storm"].held != 0 || c.tenants["quiet"].held != 0 {
		t.Fatalf("slots leaked: running %d", c.running)
	}
}

// TestFairEdgePrunesIdleTenants: the tenants an edge class tracks stay
// bounded; idle ones are dropped first.
func TestFairEdgePrunesIdleTenants(t *testing.T) {
	clk := clock.NewMock()
	c := newEdge(overloadLimits{EdgeReads: 1, EdgeWrites: 1, EdgeChats: 1}, clk)[classReads]
	for i := range maxEdgeTenants {
		if name := fmt.Sprintf("t%d", i); c.enter(name) {
			c.leave(name)
		}
	}
	clk.Add(fairWindow)
	c.enter("late")
	c.leave("late")
	if n := len(c.tenants); n > 1 {
		t.Fatalf("%d tenants tracked after pruning, want 1", n)
	}
}

// TestStormConnectionClosedAfterRefusals: when the tarpit has no room to
// hold a refusal, a client that keeps sending on one connection after
// being refused has that connection closed after connRefusalLimit
// refusals within connRefusalWindow; another tenant's
// request is still served. A refusal when every slot is taken happens
// before authentication.
func TestStormConnectionClosedAfterRefusals(t *testing.T) {
	lim := hostLimits(2, true, time.Second)
	lim.EdgeReads = 1
	none := 0
	e := newEnv(t, memoryBackend, nil, func(o *Options) { o.limits, o.tarpitSlots = &lim, &none })
	reads := e.host.edge[classReads]
	// Hold the only read slot, as a long search of the storm tenant would.
	if !reads.enter("acme") {
		t.Fatal("slot not taken")
	}
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	closed := 0
	for i := range connRefusalLimit {
		req, err := http.NewRequest("POST", e.srv.URL+apollo+"/search", strings.NewReader(`{"query":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		// No Authorization header: a full class refuses before
		// authenticating.
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Fatalf("request %d: %d", i, res.StatusCode)
		}
		if res.Close {
			closed++
			if i != connRefusalLimit-1 {
				t.Fatalf("connection closed after %d refusals, want %d", i+1, connRefusalLimit)
			}
		}
	}
	// Every refusal after the first came early, and none could be held.
	if full, held := e.host.tarpit.full.Load(), e.host.tarpit.held.Load(); full != connRefusalLimit-1 || held != 0 {
		t.Fatalf("tarpit full %d times, held %d, want %d and 0", full, held, connRefusalLimit-1)
	}
	if closed != 1 || e.host.closedConns.Load() != 1 {
		t.Fatalf("closed %d connections (host counted %d), want 1", closed, e.host.closedConns.Load())
	}
	reads.leave("acme")
	// A well-behaved tenant is served once the slot is free.
	if ids := e.searchIDs(carolToken, "apollo", "anything"); len(ids) != 0 {
		t.Fatalf("globex search: %v", ids)
	}
}
