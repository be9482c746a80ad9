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
// class and no more; once another tenant is active, that tenant's
// requests up to its own share get in on the reserve although the slots
// are all taken, the total never passes slots + reserve, and from three
// active tenants on each holds at most 2·slots/n. A tenant that has been
// quiet for fairWindow no longer counts.
func TestFairEdgeShareBetweenTenants(t *testing.T) {
	clk := clock.NewMock()
	c := newEdge(overloadLimits{EdgeReads: 4, EdgeWrites: 1, EdgeChats: 1}, clk)[classReads]
	enterN := func(tenant string, n int) {
		t.Helper()
		for i := range n {
			if !c.enter(tenant) {
				t.Fatalf("%s refused at request %d of %d", tenant, i+1, n)
			}
		}
	}
	// Alone, the storm tenant takes all four slots; the fifth is refused
	// (the reserve is not for a tenant at its share).
	enterN("storm", 4)
	if c.enter("storm") {
		t.Fatal("a lone tenant got past the slots")
	}
	if c.full() {
		t.Fatal("the class reports full with its reserve free")
	}
	if got := c.unfair.Load(); got != 1 {
		t.Fatalf("unfair refusals %d, want 1", got)
	}
	// A quiet tenant arrives while the storm holds every slot: its
	// requests, up to its share (the slots, with two tenants active), get
	// in on the reserve; then the class is full for everyone.
	enterN("quiet", 4)
	if !c.full() || c.enter("quiet") || c.enter("storm") {
		t.Fatal("the class let in more than slots + reserve")
	}
	if c.running != 8 {
		t.Fatalf("running %d, want 8", c.running)
	}
	// The storm's requests end; it may take its share again, no more.
	for range 4 {
		c.leave("storm")
	}
	enterN("storm", 4)
	if c.enter("storm") {
		t.Fatal("the storm got past its share")
	}
	// A third tenant: every share drops to 2·4/3 = 2. Nobody holding two
	// or more gets in; the newcomer gets its two.
	for range 4 {
		c.leave("quiet")
	}
	enterN("third", 2)
	if c.enter("third") {
		t.Fatal("the third tenant got past its share of 2")
	}
	enterN("quiet", 2)
	if c.enter("quiet") || c.enter("storm") {
		t.Fatal("a tenant at or over its share got in with no slot free")
	}
	// Everyone but the storm finishes and stays quiet for fairWindow: the
	// storm is alone again, at its share (the slots), with none free.
	for range 2 {
		c.leave("third")
		c.leave("quiet")
	}
	clk.Add(fairWindow)
	if c.enter("storm") {
		t.Fatal("a lone tenant holding every slot got another")
	}
	c.leave("storm")
	enterN("storm", 1)
	for range 4 {
		c.leave("storm")
	}
	for name, u := range c.tenants {
		if u.held != 0 {
			t.Fatalf("%s still holds %d", name, u.held)
		}
	}
	if c.running != 0 {
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
	// Hold the only read slot and the reserve, as long searches of two
	// tenants would.
	if !reads.enter("acme") || !reads.enter("initech") || !reads.full() {
		t.Fatal("slots not taken")
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
	reads.leave("initech")
	// A well-behaved tenant is served once the slot is free.
	if ids := e.searchIDs(carolToken, "apollo", "anything"); len(ids) != 0 {
		t.Fatalf("globex search: %v", ids)
	}
}
