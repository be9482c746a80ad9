package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
	"github.com/goagents/memorykit/storetest"
)

// The populated conformance run (TestCitusConformancePopulated): every
// schema it migrates is filled, through a Store, with the rows of tenants
// the suites never use, and only then distributed, so Citus moves those
// rows to the shards before the suite runs on the schema. When a case
// ends, the rows are read again and must be exactly what was written.

// otherProfile is the embedding profile of the other tenants' queue and
// lease; the suites never use it.
const otherProfile = "other/populated-v1"

// otherTenants are the tenants of the rows written before distribution.
var otherTenants = []string{"other-tenant-1", "other-tenant-2"}

var (
	// populateOnMigrate holds the schemas the migration hook fills with
	// other tenants' rows before distributing them.
	populateOnMigrate sync.Map
	// otherRows holds, by schema, the other tenants' rows as read right
	// after they were written (see readOtherRows).
	otherRows sync.Map
)

// othersTables are the tables whose rows of the other tenants are
// compared: every distributed table and the job queue.
var othersTables = append(slices.Clone(distributedTables), "jobs")

// populateOthers writes the other tenants' rows into schema through a
// Store on a transaction of conn: per tenant two records with a vector of
// otherProfile, two without (queued for it, one of them leased for ten
// years), a corrected record (a second revision), a candidate, a vector of
// every suite profile on each active record (so none is pending for a
// profile the suites use), a finished job and a failed one. It records
// what it wrote in otherRows.
func populateOthers(ctx context.Context, conn *pgx.Conn, schema string) error {
	guard, err := memorykit.NewWriteGuard(storetest.Limits(), storetest.AllowAllValidator{})
	if err != nil {
		return err
	}
	keyer, err := memorykit.NewTombstoneKeyer([]byte(storetest.TestTombstoneSecret))
	if err != nil {
		return err
	}
	clk := clock.NewMock()
	clk.Set(storetest.Epoch.Add(-24 * time.Hour))
	// Open migrates on a connection without the vector types.
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		return err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	s, err := newTxStore(ctx, tx, Config{Clock: clk, Guard: guard, Tombstones: keyer, Schema: schema})
	if err != nil {
		return err
	}
	actor := memorykit.Actor{Kind: memorykit.ActorUser, ID: "other-user"}
	for n, tenant := range otherTenants {
		scope, err := memorykit.ProjectScope(tenant, "project-1")
		if err != nil {
			return err
		}
		rec := func(id, key, content string, status memorykit.Status) memorykit.NewRecord {
			return memorykit.NewRecord{ID: fmt.Sprintf("%s-%s", tenant, id), Scope: scope, Kind: memorykit.KindFact,
				Key: key, Content: content, Status: status, Actor: actor, Reason: "seed"}
		}
		vec := []float32{1, float32(n), 0.5}
		created, err := s.CreateBatch(ctx, []storekit.BatchItem{
			{Record: rec("a", "deploy region", "the api runs in eu-west-1", memorykit.StatusActive),
				Embedding: &storekit.BatchEmbedding{Profile: otherProfile, Vector: vec}},
			{Record: rec("b", "release day", "release trains leave on friday", memorykit.StatusActive),
				Embedding: &storekit.BatchEmbedding{Profile: otherProfile, Vector: vec}},
			{Record: rec("c", "on call", "alice is on call this week", memorykit.StatusActive)},
			{Record: rec("d", "database", "the primary database is postgres", memorykit.StatusActive)},
			{Record: rec("e", "favourite colour", "the team likes teal", memorykit.StatusCandidate)},
		})
		if err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				return fmt.Errorf("batch of %s: %s %s: %w", tenant, pe.Message, pe.Detail, err)
			}
			return fmt.Errorf("batch of %s: %w", tenant, err)
		}
		corrected, err := s.Correct(ctx, storekit.Correction{
			Transition: storekit.Transition{Scope: scope, ID: created[2].ID, Actor: actor, Reason: "fix"},
			Content:    "bob is on call this week",
		})
		if err != nil {
			return fmt.Errorf("correct in %s: %w", tenant, err)
		}
		created[2] = corrected
		for _, r := range created {
			if r.Status != memorykit.StatusActive {
				continue
			}
			for _, p := range storetest.Profiles() {
				if err := s.PutEmbedding(ctx, storekit.EmbeddingPut{Scope: scope, RecordID: r.ID, Profile: p,
					ContentHash: r.ContentHash, Vector: vec, WorkerID: "other-embedder"}); err != nil {
					return fmt.Errorf("vector of %s for %s: %w", r.ID, p, err)
				}
			}
		}
		for i, state := range []string{"done", "failed"} {
			id := storekit.ExtractionJobID(scope, fmt.Sprintf("turn-%d", i))
			if _, err := s.EnqueueJob(ctx, storekit.NewJob{ID: id, Scope: scope, Payload: "user: the api runs in eu-west-1",
				MaxAttempts: 1, MaxReaps: 1}); err != nil {
				return err
			}
			jobs, err := s.LeaseJobs(ctx, storekit.JobLease{WorkerID: "other-extractor", TTL: time.Minute, Max: 1})
			if err != nil || len(jobs) != 1 || jobs[0].ID != id {
				return fmt.Errorf("lease the %s job: %d jobs, %v", state, len(jobs), err)
			}
			if state == "done" {
				_, err = s.CompleteJob(ctx, storekit.JobCompletion{JobID: id, WorkerID: "other-extractor", LeaseToken: jobs[0].LeaseToken})
			} else {
				_, err = s.FailJob(ctx, storekit.JobFailure{JobID: id, WorkerID: "other-extractor", LeaseToken: jobs[0].LeaseToken,
					Reason: "seed_failure", Final: true})
			}
			if err != nil {
				return fmt.Errorf("finish the %s job: %w", state, err)
			}
		}
	}
	// Registers otherProfile, queueing the records without its vector,
	// and leases the first of them for longer than any case's clock runs.
	tasks, err := s.LeaseEmbeddings(ctx, storekit.EmbeddingLease{Profile: otherProfile, WorkerID: "other-embedder",
		TTL: 10 * 365 * 24 * time.Hour, Max: 1})
	if err != nil || len(tasks) != 1 {
		return fmt.Errorf("lease a queued record: %d tasks, %v", len(tasks), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	rows, err := readOtherRows(ctx, conn, schema)
	if err != nil {
		return err
	}
	for _, t := range []string{"records", "revisions", "embeddings", "embedding_leases", "embedding_queue", "recall_text", "term_df", "scope_versions", "jobs"} {
		if len(rows[t]) == 0 {
			return fmt.Errorf("no rows of the other tenants in %s", t)
		}
	}
	otherRows.Store(schema, rows)
	return nil
}

// batchSender is a pgx.Conn or pgx.Tx.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// readOtherRows reads every row of the other tenants in othersTables (as
// row text, sorted) and whether otherProfile is registered, in one round
// trip.
func readOtherRows(ctx context.Context, db batchSender, schema string) (map[string][]string, error) {
	b := &pgx.Batch{}
	for _, t := range othersTables {
		b.Queue(`SELECT t::text FROM `+qualified(schema, t)+` t WHERE tenant_id = ANY($1)`, otherTenants)
	}
	b.Queue(`SELECT profile FROM `+qualified(schema, "embedding_profiles")+` WHERE profile = $1`, otherProfile)
	res := db.SendBatch(ctx, b)
	out := map[string][]string{}
	for _, t := range append(slices.Clone(othersTables), "embedding_profiles") {
		rows, err := res.Query()
		if err != nil {
			_ = res.Close()
			return nil, fmt.Errorf("read %s: %w", t, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			_ = res.Close()
			return nil, fmt.Errorf("read %s: %w", t, err)
		}
		slices.Sort(got)
		out[t] = got
	}
	return out, res.Close()
}

// checkOthers compares the other tenants' rows in schema, read through
// db, with what was written before the schema was distributed.
func checkOthers(ctx context.Context, db batchSender, schema string) error {
	v, ok := otherRows.Load(schema)
	if !ok {
		return errors.New("schema was not populated")
	}
	want := v.(map[string][]string)
	got, err := readOtherRows(ctx, db, schema)
	if err != nil {
		return err
	}
	var diffs []string
	for t, w := range want {
		if !slices.Equal(got[t], w) {
			diffs = append(diffs, fmt.Sprintf("%s: %d rows, want %d\n  got  %s\n  want %s", t, len(got[t]), len(w),
				strings.Join(got[t], "\n       "), strings.Join(w, "\n       ")))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return fmt.Errorf("the other tenants' rows changed:\n%s", strings.Join(diffs, "\n"))
	}
	return nil
}

// TestCitusPopulatedSchemaMovesAndChecks: the populated schema the
// conformance run gets is distributed with the other tenants' rows on the
// shards, checkOthers accepts it as written, and it notices a changed
// row.
func TestCitusPopulatedSchemaMovesAndChecks(t *testing.T) {
	schema := uniqueSchema(t)
	populateOnMigrate.Store(schema, true)
	s := openStore(t, schema, newClock())
	if !s.distributed {
		t.Fatal("the populated schema is not distributed")
	}
	ctx := t.Context()
	admin := adminConn(t)
	if err := checkOthers(ctx, admin, schema); err != nil {
		t.Fatal(err)
	}
	v, _ := otherRows.Load(schema)
	want := len(v.(map[string][]string)["records"])
	var onShards int
	if err := admin.QueryRow(ctx, `SELECT coalesce(sum(result::int), 0) FROM run_command_on_shards($1, 'SELECT count(*) FROM %s')`,
		qualified(schema, "records")).Scan(&onShards); err != nil {
		t.Fatal(err)
	}
	if onShards != want {
		t.Fatalf("%d records on the shards, %d written", onShards, want)
	}
	if _, err := admin.Exec(ctx, `UPDATE `+qualified(schema, "records")+` SET content = 'changed' WHERE tenant_id = $1 AND id = $2`,
		otherTenants[0], otherTenants[0]+"-a"); err != nil {
		t.Fatal(err)
	}
	if err := checkOthers(ctx, admin, schema); err == nil {
		t.Fatal("checkOthers missed a changed record")
	}
}
