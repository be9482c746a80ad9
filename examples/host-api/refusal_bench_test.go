package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"
)

// BenchmarkRefusal is the CPU cost of one 503 from a full edge class, in
// the Host's handler only (no network).
func BenchmarkRefusal(b *testing.B) {
	dir, err := LoadDirectory("")
	if err != nil {
		b.Fatal(err)
	}
	h, err := NewHost(context.Background(), Options{Directory: dir, Clock: clock.New(), Logger: zap.NewNop(), Model: ScriptedModel{},
		WorkerID: "bench", TombstoneSecret: testTombstoneSecret})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Close(ctx)
	}()
	c := h.edge[classReads]
	for range c.limit {
		c.enter("acme")
	}
	handler := h.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/projects/apollo/search", strings.NewReader(`{"query":"deploy region"}`))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable {
			b.Fatal(rec.Code)
		}
	}
}
