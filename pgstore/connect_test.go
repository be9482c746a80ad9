package pgstore

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goagents/memorykit"
)

// startingUpProxy accepts connections for a PostgreSQL server: the first
// refuse connections answer the startup message with the FATAL error
// 57P03 (cannot_connect_now) a restarting server sends; later ones are
// proxied to target.
type startingUpProxy struct {
	ln      net.Listener
	target  string
	refuse  int32
	seen    atomic.Int32
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
	refused chan struct{}
}

func newStartingUpProxy(t *testing.T, target string, refuse int) *startingUpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &startingUpProxy{ln: ln, target: target, refuse: int32(refuse), refused: make(chan struct{}, refuse)}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *startingUpProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *startingUpProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *startingUpProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c)
		n := p.seen.Add(1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if n <= p.refuse {
				p.startingUp(c)
				p.refused <- struct{}{}
				return
			}
			p.pipe(c)
		}()
	}
}

// startingUp reads the startup message (declining TLS) and answers 57P03.
func (p *startingUpProxy) startingUp(c net.Conn) {
	defer c.Close()
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		code := binary.BigEndian.Uint32(hdr[4:])
		if n == 8 && (code == 80877103 || code == 80877104) { // SSL or GSS request
			_, _ = c.Write([]byte{'N'})
			continue
		}
		if n > 8 {
			if _, err := io.CopyN(io.Discard, c, int64(n-8)); err != nil {
				return
			}
		}
		break
	}
	var body []byte
	for _, f := range []struct {
		typ byte
		val string
	}{{'S', "FATAL"}, {'V', "FATAL"}, {'C', "57P03"}, {'M', "the database system is starting up"}} {
		body = append(body, f.typ)
		body = append(body, f.val...)
		body = append(body, 0)
	}
	body = append(body, 0)
	msg := []byte{'E', 0, 0, 0, 0}
	binary.BigEndian.PutUint32(msg[1:], uint32(len(body)+4))
	_, _ = c.Write(append(msg, body...))
}

func (p *startingUpProxy) pipe(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.track(up)
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// viaProxy returns dsn pointed at the proxy's address.
func viaProxy(t *testing.T, dsn string, p *startingUpProxy) (string, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	u.Host = p.ln.Addr().String()
	return u.String(), target
}

// TestPostgresOpenRetriesWhileStartingUp: while the server answers 57P03
// (a restart), Open waits on its clock with backoff and connects once the
// server takes connections, within the caller's context.
func TestPostgresOpenRetriesWhileStartingUp(t *testing.T) {
	dsn := testDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newStartingUpProxy(t, u.Host, 3)
	proxied, _ := viaProxy(t, dsn, p)
	clk := newClock()
	waits := make(chan time.Duration, 10)
	onConnectRetry = func(_ int, d time.Duration) { waits <- d }
	t.Cleanup(func() { onConnectRetry = nil })
	type result struct {
		s   *Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Open(context.Background(), proxied, Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: uniqueSchema(t), MaxConns: 2})
		done <- result{s, err}
	}()
	for _, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		select {
		case d := <-waits:
			if d != want {
				t.Fatalf("retry wait %v, want %v", d, want)
			}
			clk.Add(d)
		case r := <-done:
			t.Fatalf("Open returned before the server took connections: %v", r.err)
		case <-time.After(time.Minute): // a guard against a hang, not a wait for work
			t.Fatal("Open never armed a retry wait")
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("Open after the restart: %v", r.err)
	}
	defer r.s.Close()
	if n := p.seen.Load(); n < 4 {
		t.Fatalf("%d connections reached the proxy, want at least 4", n)
	}
}

// TestPostgresOpenGivesUpWithTheContext: a server that keeps refusing is
// retried until the caller's context ends; Open then reports the last,
// recoverable failure.
func TestPostgresOpenGivesUpWithTheContext(t *testing.T) {
	dsn := testDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newStartingUpProxy(t, u.Host, 1000)
	proxied, _ := viaProxy(t, dsn, p)
	clk := newClock()
	ctx, cancel := context.WithCancel(context.Background())
	waits := make(chan time.Duration, 10)
	onConnectRetry = func(_ int, d time.Duration) { waits <- d }
	t.Cleanup(func() { onConnectRetry = nil })
	done := make(chan error, 1)
	go func() {
		_, err := Open(ctx, proxied, Config{Clock: clk, Guard: testGuard(t), Tombstones: testTombstones(t), Schema: uniqueSchema(t)})
		done <- err
	}()
	<-waits
	clk.Add(100 * time.Millisecond)
	<-waits
	cancel()
	err = <-done
	var me *memorykit.Error
	if !errors.As(err, &me) || !errors.Is(err, memorykit.ErrUnavailable) || !me.Retry {
		t.Fatalf("Open = %v, want a recoverable ErrUnavailable", err)
	}
	if me.Reason != "sqlstate_57p03" {
		t.Fatalf("reason %q, want sqlstate_57p03", me.Reason)
	}
}
