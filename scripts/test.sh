#!/usr/bin/env bash
# memorykit's test command: the one the README names and CI runs.
#
# It provisions PostgreSQL 15 + pgvector (or uses MEMORYKIT_POSTGRES_TEST_DSN
# when given), then runs the quality gates and the whole test suite with
# MEMORYKIT_REQUIRE_POSTGRES=1, so a missing database fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

STATICCHECK_VERSION=v0.8.2

echo "== provisioning PostgreSQL + pgvector"
eval "$(scripts/postgres-test-env.sh)"
export MEMORYKIT_POSTGRES_TEST_DSN
export MEMORYKIT_REQUIRE_POSTGRES=1

# The Citus cluster (a coordinator and two workers) for pgstore's TestCitus
# tests: built and started in the background (building Citus takes about 12
# minutes on 2 cores the first time) while the static gates run.
echo "== provisioning Citus in the background (scripts/citus-test-env.sh)"
citus_env=$(mktemp /tmp/memorykit-citus-env.XXXXXX)
scripts/citus-test-env.sh >"$citus_env" 2>"$citus_env.log" &
citus_pid=$!

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck $STATICCHECK_VERSION"
go run "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" ./...

echo "== go mod tidy -diff"
if ! go mod tidy -diff; then
  echo "go.mod/go.sum are not tidy: run 'go mod tidy'"; exit 1
fi

echo "== waiting for Citus"
citus_wait_start=$(date +%s)
if ! wait "$citus_pid"; then
  echo "scripts/citus-test-env.sh failed:"; cat "$citus_env.log"; exit 1
fi
echo "waited $(( $(date +%s) - citus_wait_start )) s"
eval "$(cat "$citus_env")"
export MEMORYKIT_CITUS_TEST_DSN

echo "== go test -race -count=1 ./... (MEMORYKIT_REQUIRE_POSTGRES=1)"
log=$(mktemp /tmp/memorykit-test.XXXXXX)
status=0
go test -race -count=1 -timeout 45m -v ./... >"$log" 2>&1 || status=$?
grep -E '^(ok|FAIL|---|panic:|\?)' "$log" | grep -vE '^\s*--- PASS' | grep -vE '^--- PASS' || true
echo "== summary"
printf 'passed: %s  failed: %s  skipped: %s\n' \
  "$(grep -cE -- '--- PASS' "$log" || true)" \
  "$(grep -cE -- '--- FAIL' "$log" || true)" \
  "$(grep -cE -- '--- SKIP' "$log" || true)"
printf 'PostgreSQL tests passed: %s\n' "$(grep -cE -- '--- PASS: TestPostgres' "$log" || true)"
printf 'Citus tests passed: %s\n' "$(grep -cE -- '--- PASS: TestCitus' "$log" || true)"
if [ "$status" -ne 0 ]; then
  echo "== failures (full log: $log)"
  grep -nE -B2 -A20 -- '--- FAIL|^panic:|race detected' "$log" | head -300 || true
  exit "$status"
fi
echo "== Citus: a worker stopped during a batch write and a recall (TestCitusWorkerStopped)"
# Alone, after the main run: it stops and restarts a worker of the cluster.
MEMORYKIT_CITUS_FAULT=1 MEMORYKIT_CITUS_DIR="${MEMORYKIT_CITUS_DIR:-/tmp/memorykit-citus}" \
  go test -count=1 -run '^TestCitusWorkerStopped$' ./pgstore/
echo "== fuzz (bounded)"
# Budgets are execution counts, not durations: with a duration, Go 1.26's
# fuzz coordinator can report "context deadline exceeded" at the end of the
# window when a worker is slow to answer on a loaded machine (golang/go#75804,
# fixed in Go 1.27), failing the run without any failing input. A count has
# no deadline to race; each budget is about 5-10 s of work on 2 cores.
# Minimizing a newly interesting input is bounded by count too (the default
# is up to 60 s per input).
go test -run '^$' -fuzz '^FuzzSearchTermsInvariants$' -fuzztime 100000x -fuzzminimizetime 500x ./internal/plumbing/textrule/
go test -run '^$' -fuzz '^FuzzMemoryView$' -fuzztime 5000x -fuzzminimizetime 500x ./projector/
go test -run '^$' -fuzz '^FuzzClaimDetector$' -fuzztime 20000x -fuzzminimizetime 500x ./memorytools/
go test -run '^$' -fuzz '^FuzzNormalizeKey$' -fuzztime 100000x -fuzzminimizetime 500x ./internal/plumbing/textrule/
go test -run '^$' -fuzz '^FuzzCanaryFindsItsEncodings$' -fuzztime 10000x -fuzzminimizetime 500x ./storekit/
go test -run '^$' -fuzz '^FuzzRetryAfter$' -fuzztime 50000x -fuzzminimizetime 500x ./turn/
go -C examples/host-api test -run '^$' -fuzz '^FuzzDecodeBody$' -fuzztime 25000x -fuzzminimizetime 500x .
go test -run '^$' -fuzz '^FuzzEngineAnswer$' -fuzztime 10000x -fuzzminimizetime 500x ./extraction/
go test -run '^$' -fuzz '^FuzzExplicit$' -fuzztime 20000x -fuzzminimizetime 500x ./extraction/
go test -run '^$' -fuzz '^FuzzRecallFromFile$' -fuzztime 3000x -fuzzminimizetime 200x ./sqlitestore/
echo "== go test ./... without a database (PostgreSQL tests must skip, not fail)"
env -u MEMORYKIT_POSTGRES_TEST_DSN -u MEMORYKIT_CITUS_TEST_DSN -u MEMORYKIT_REQUIRE_POSTGRES go test -count=1 ./... >"$log.nodb" 2>&1 || {
  echo "plain go test without a database failed:"; grep -E -B2 -A15 -- '--- FAIL|^FAIL' "$log.nodb" | head -100; exit 1; }
echo "ok (log: $log.nodb)"

# Modules nested in this repository, each with its own go.mod so that the
# core module depends on no model SDK. The root's ./... patterns stop at a
# nested go.mod, so every gate above runs again inside each of them (gofmt
# already covered their files).
for mod in adapters/openai adapters/anthropic adapters/mcp examples/host-api; do
  echo "== $mod: go vet, staticcheck, go test -race (MEMORYKIT_REQUIRE_POSTGRES=1), without a database, go mod tidy -diff"
  (
    cd "$mod"
    go vet ./...
    go run "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" ./...
    go test -race -count=1 ./...
    env -u MEMORYKIT_POSTGRES_TEST_DSN -u MEMORYKIT_REQUIRE_POSTGRES go test -count=1 ./...
    go mod tidy -diff
  )
done
# The example Host compiles its real-model path (model_sdk.go: the OpenAI
# and Anthropic SDKs) only with the build tag sdk, so a first `go run .`
# stays short; the same gates run on that build too.
echo "== examples/host-api -tags sdk: go vet, staticcheck, go test -race (MEMORYKIT_REQUIRE_POSTGRES=1)"
(
  cd examples/host-api
  go vet -tags sdk ./...
  go run "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" -tags sdk ./...
  # The untagged run above covered every other test; these are the ones
  # the tag adds (model_sdk_test.go).
  go test -race -count=1 -tags sdk -run 'OnOpenAI|NewTurnRunnerKinds|ExtractionModel|ExtractionModelKinds' ./...
)
echo "all green (full log: $log)"
