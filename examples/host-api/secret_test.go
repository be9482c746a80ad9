package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestTombstoneSecretFirstStart: the embedded Host creates a random
// secret file (mode 0600) beside its data on first start, says so in one
// log line, and reads the same secret on every later start; the variable
// wins when set; a Host on PostgreSQL without the variable fails with an
// error naming it; a Host in process memory gets a random secret.
func TestTombstoneSecretFirstStart(t *testing.T) {
	noEnv := func(string) string { return "" }
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	dir := filepath.Join(t.TempDir(), "memorykit-data")

	first, err := tombstoneSecret(log, noEnv, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 64 {
		t.Fatalf("secret of %d bytes, want 64 hex characters", len(first))
	}
	path := filepath.Join(dir, SecretFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o600 {
		t.Fatalf("secret file mode %o, want 600", mode)
	}
	created := logs.FilterMessageSnippet("created a tombstone secret").All()
	if len(created) != 1 || created[0].ContextMap()["file"] != path {
		t.Fatalf("log lines %+v, want one naming %s", logs.All(), path)
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message, string(first)) || strings.Contains(fmt.Sprint(e.ContextMap()), string(first)) {
			t.Fatal("the secret reached the log")
		}
	}

	again, err := tombstoneSecret(log, noEnv, "", dir)
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("second start: %v (same secret %v)", err, bytes.Equal(again, first))
	}
	if n := logs.FilterMessageSnippet("created a tombstone secret").Len(); n != 1 {
		t.Fatalf("%d creation log lines after a restart, want 1", n)
	}

	env := func(k string) string {
		if k == envTombstoneSecret {
			return "from the environment, thirty-two bytes or more"
		}
		return ""
	}
	if s, err := tombstoneSecret(log, env, "", dir); err != nil || string(s) != "from the environment, thirty-two bytes or more" {
		t.Fatalf("variable set: %q %v", s, err)
	}
	if s, err := tombstoneSecret(log, env, "postgres://x", ""); err != nil || len(s) == 0 {
		t.Fatalf("variable set with -dsn: %q %v", s, err)
	}

	if _, err := tombstoneSecret(log, noEnv, "postgres://x", ""); err == nil || !strings.Contains(err.Error(), envTombstoneSecret) {
		t.Fatalf("-dsn without the variable: %v", err)
	}
	a, errA := tombstoneSecret(log, noEnv, "", "")
	b, errB := tombstoneSecret(log, noEnv, "", "")
	if errA != nil || errB != nil || len(a) != 64 || bytes.Equal(a, b) {
		t.Fatalf("in-memory secrets %q %q (%v %v)", a, b, errA, errB)
	}

	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := tombstoneSecret(log, noEnv, "", dir); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty secret file: %v", err)
	}
}
