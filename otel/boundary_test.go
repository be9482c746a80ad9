package mkotel_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreDoesNotImportOpenTelemetry: only this package (and the examples)
// may depend on OpenTelemetry; memorykit, the stores, runtime, the workers
// and the CLI build without it.
func TestCoreDoesNotImportOpenTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}",
		"github.com/goagents/memorykit/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if strings.HasPrefix(pkg, "github.com/goagents/memorykit/otel") || strings.Contains(pkg, "/examples/") {
			continue
		}
		checked++
		for _, d := range strings.Fields(deps) {
			if strings.HasPrefix(d, "go.opentelemetry.io/") || strings.HasPrefix(d, "github.com/goagents/memorykit/otel") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked only %d packages", checked)
	}
}
