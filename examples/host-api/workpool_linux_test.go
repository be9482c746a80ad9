package main

import (
	"net/http"
	"runtime"
	"syscall"
	"testing"
)

// threadNice is the nice value of the calling thread (the raw system
// call answers 20 - nice).
func threadNice(t *testing.T) int {
	t.Helper()
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - p
}

// TestLowerThreadPriority: lowerThreadPriority raises only the calling
// thread's nice value, by the amount asked, relative to where it was.
func TestLowerThreadPriority(t *testing.T) {
	base := threadNice(t)
	if base >= 19 {
		t.Skip("the test already runs at the lowest priority")
	}
	got := make(chan int, 1)
	go func() {
		// Locked and never unlocked: the thread ends with the goroutine.
		runtime.LockOSThread()
		if err := lowerThreadPriority(3); err != nil {
			t.Error(err)
		}
		got <- threadNice(t)
	}()
	if n := <-got; n != min(19, base+3) {
		t.Fatalf("nice %d, want %d", n, min(19, base+3))
	}
	if n := threadNice(t); n != base {
		t.Fatalf("caller's thread changed to nice %d from %d", n, base)
	}
}

// TestHostReadsRunAtLowerPriority: a request of the reads class runs on a
// work pool thread whose nice value is hostWorkerNice higher than the
// front end's, while other classes run on the HTTP server's own
// goroutine at the default priority.
func TestHostReadsRunAtLowerPriority(t *testing.T) {
	base := threadNice(t)
	if base >= 19 {
		t.Skip("the test already runs at the lowest priority")
	}
	e := newEnv(t, memoryBackend, nil)
	seen := map[string]int{}
	probe := func(name string) func(http.ResponseWriter, *http.Request, call) {
		return func(w http.ResponseWriter, _ *http.Request, _ call) {
			seen[name] = threadNice(t)
			w.WriteHeader(http.StatusNoContent)
		}
	}
	e.host.route("GET /v1/projects/{project}/probe", nil, probe("read"))
	e.host.route("POST /v1/projects/{project}/probe", nil, probe("write"))
	e.must(http.StatusNoContent, aliceToken, "GET", "/v1/projects/apollo/probe", "")
	e.must(http.StatusNoContent, aliceToken, "POST", "/v1/projects/apollo/probe", "")
	if want := min(19, base+hostWorkerNice); seen["read"] != want {
		t.Errorf("read ran at nice %d, want %d", seen["read"], want)
	}
	if seen["write"] != base {
		t.Errorf("write ran at nice %d, want %d", seen["write"], base)
	}
}
