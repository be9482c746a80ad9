package pgstore

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
	"github.com/goagents/memorykit/storetest"
)

// envCitusDSN names the coordinator of a Citus cluster with pgvector
// (scripts/citus-test-env.sh starts one). The TestCitus... tests run
// PostgreSQL tests again there: every schema a Store of those tests
// migrates is distributed right after (testAfterMigrate), so they exercise
// the same code on distributed tables.
const envCitusDSN = "MEMORYKIT_CITUS_TEST_DSN"

// citusDSN returns the Citus coordinator's DSN; without one it skips the
// test, or fails it under MEMORYKIT_REQUIRE_POSTGRES=1.
func citusDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(envCitusDSN)
	if dsn == "" {
		if pgtest.Required() {
			t.Fatalf("%s=1 but %s is not set (scripts/citus-test-env.sh prints it)", pgtest.EnvRequire, envCitusDSN)
		}
		t.Skipf("%s is not set: skipping the Citus test (set it, and %s=1 to make a missing cluster fail)", envCitusDSN, pgtest.EnvRequire)
	}
	return dsn
}

// keepLocal holds the schemas the hook below leaves undistributed.
var keepLocal sync.Map

func init() {
	// Distribute every schema migrated on a Citus database (a no-op
	// elsewhere: plain PostgreSQL has no citus extension).
	testAfterMigrate = func(ctx context.Context, conn *pgx.Conn, schema string) error {
		if _, ok := keepLocal.Load(schema); ok {
			return nil
		}
		var citus bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil || !citus {
			return err
		}
		if _, ok := populateOnMigrate.LoadAndDelete(schema); ok {
			if err := populateOthers(ctx, conn, schema); err != nil {
				return fmt.Errorf("populate %s: %w", schema, err)
			}
		}
		return withSessionLock(ctx, "pgstore.distribute", conn, schemaLockKey(schema), func() error {
			return distribute(ctx, "pgstore.distribute", conn, schema)
		})
	}
}

// envCitusFull=1 also runs the conformance suite a second time through the
// recall cache on distributed schemas (about ten minutes on 2 cores); the
// test command runs it through SQL recall, and the cache's differential
// test below holds the cache to SQL recall on Citus.
const envCitusFull = "MEMORYKIT_CITUS_FULL"

// The whole conformance suite on distributed schemas, through SQL recall
// and (with MEMORYKIT_CITUS_FULL=1) through the recall cache.
func TestCitusConformance(t *testing.T) { TestPostgresConformance(t) }

// TestCitusConformancePopulated runs the conformance suite (SQL recall)
// on schemas that held other tenants' rows before they were distributed
// (populateOthers): Citus moves those rows to the shards, the suite
// passes beside them, and every case leaves them exactly as written
// (checked when the case ends, before its transaction rolls back).
//
// One case is left to TestCitusConformance: PurgeResumesAfterKill cuts
// and resumes twenty purges one after another, each on a fresh store
// (here a schema migrated, populated and distributed, about 12 s on 2
// cores), which alone would take this run from about 2 to about 6
// minutes. Purge, PurgeCountsJobs and PurgeHoldsWrites purge beside the
// other tenants' rows here.
func TestCitusConformancePopulated(t *testing.T) {
	h := pgHarnessWith(t, true)
	h.Leave = map[string]string{
		"PurgeResumesAfterKill": "twenty purges on fresh stores, one after another: run by TestCitusConformance",
	}
	storetest.RunAll(t, h)
}
func TestCitusCacheRecallConformance(t *testing.T) {
	if os.Getenv(envCitusFull) != "1" {
		t.Skipf("set %s=1 to run the conformance suite through the recall cache on Citus too", envCitusFull)
	}
	TestPostgresCacheRecallConformance(t)
}
func TestCitusReasonsGoThroughContentPolicy(t *testing.T) {
	TestPostgresReasonsGoThroughContentPolicy(t)
}

// The recall cache's differential test (one seed of 500 steps: every
// step is a few distributed statements, several times slower than on one
// server) and the SQL/memorystore one.
func TestCitusRecallCacheMatchesSQL(t *testing.T) { testRecallCacheMatchesSQL(t, 1, 500) }
func TestCitusMatchesMemorystore(t *testing.T)    { TestPostgresMatchesMemorystore(t) }

// Several workers sharing the job and embedding queues.
func TestCitusSharedJobQueue(t *testing.T) { TestPostgresSharedJobQueue(t) }
func TestCitusJobCompletionStoresCandidatesOnce(t *testing.T) {
	TestPostgresJobCompletionStoresCandidatesOnce(t)
}
func TestCitusEmbeddingLeasesAreExclusive(t *testing.T) { TestPostgresEmbeddingLeasesAreExclusive(t) }

// The embedding queue holds exactly the pending records after every kind
// of write, batches over several tenants included.
func TestCitusEmbeddingQueueTracksPendingRecords(t *testing.T) {
	TestPostgresEmbeddingQueueTracksPendingRecords(t)
}
