package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/embedworker"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/reviewer"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
)

func runMigrate(ctx context.Context, c *cli, o *options) error {
	if o.sqlite == "" {
		if _, err := pgx.ParseConfig(o.dsn); err != nil {
			return usagef("--dsn does not parse")
		}
	}
	store, err := openStore(ctx, o) // Open applies the missing migrations
	if err != nil {
		return err
	}
	where := store.Where()
	// A SQLite file is read after the store released it.
	store.Close()
	version, err := schemaVersion(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%s: migrated, version %d\n", where, version)
	if o.distribute {
		return runDistribute(ctx, c, o)
	}
	return nil
}

// Stats is the numbers status reports; it holds no content.
type Stats struct {
	SchemaVersion int
	// ByStatus counts the Scope's records per status.
	ByStatus map[memorykit.Status]int
	// Scope holds the Scope's jobs, and its pending embeddings of the
	// first profile asked for.
	Scope ScopeCounts
	// PendingEmbeddings counts active records of every Scope that lack a
	// current embedding of the first profile (parked ones included).
	PendingEmbeddings int
	// Pending has one entry per profile asked for, in order.
	Pending []ProfilePending
	// Jobs counts extraction jobs of every Scope by state.
	Jobs storekit.JobCounts
}

// ProfilePending is the pending embeddings of one profile: in the Scope
// and in every Scope.
type ProfilePending struct {
	Profile string
	Scope   int
	All     int
}

// statusProfiles are the profiles status reports when --profile is not
// given: both local embedders, since a Host may embed with either (the
// example Host uses memorykit/hash-v2).
var statusProfiles = []string{embedder.LocalProfile, embedder.LocalV2Profile}

// CollectStats gathers the status numbers through the store's public API:
// records by paging through the reviewer's listing (project-sized memory
// makes that cheap), embeddings of each profile and jobs through their
// counters. At least one profile is required.
func CollectStats(ctx context.Context, s *session, profiles ...string) (Stats, error) {
	return collectStats(ctx, s, nil, profiles...)
}

// collectStats is CollectStats calling onRecords, when not nil, with the
// number of records read so far after every page.
func collectStats(ctx context.Context, s *session, onRecords func(n int), profiles ...string) (Stats, error) {
	if len(profiles) == 0 {
		return Stats{}, errors.New("status: no embedding profile")
	}
	st := Stats{SchemaVersion: s.version, ByStatus: make(map[memorykit.Status]int)}
	page := reviewer.Page{Limit: cliLimits().MaxListSize}
	read := 0
	for {
		recs, err := s.review.List(ctx, s.operator, s.scope, nil, page)
		if err != nil {
			return Stats{}, err
		}
		for _, r := range recs {
			st.ByStatus[r.Status]++
		}
		read += len(recs)
		if onRecords != nil {
			onRecords(read)
		}
		if len(recs) < page.Limit {
			break
		}
		page.AfterID = recs[len(recs)-1].ID
	}
	for i, profile := range profiles {
		scope, err := s.store.CountScope(ctx, profile, s.scope)
		if err != nil {
			return Stats{}, err
		}
		all, err := s.store.PendingEmbeddings(ctx, profile)
		if err != nil {
			return Stats{}, err
		}
		if i == 0 {
			st.Scope, st.PendingEmbeddings = scope, all
		}
		st.Pending = append(st.Pending, ProfilePending{Profile: profile, Scope: scope.PendingEmbeddings, All: all})
	}
	var err error
	if st.Jobs, err = s.store.CountJobs(ctx); err != nil {
		return Stats{}, err
	}
	return st, nil
}

func runStatus(ctx context.Context, c *cli, o *options) error {
	s, err := openSession(ctx, o)
	if err != nil {
		return err
	}
	defer s.store.Close()
	profiles := statusProfiles
	if o.profile != "" {
		profiles = []string{o.profile}
	}
	// A large project takes many pages: on a terminal, a count of the
	// records read so far.
	m := c.newMeter("reading the records of " + s.scope.String())
	m.start()
	st, err := collectStats(ctx, s, func(n int) { m.progress(n, 0) }, profiles...)
	m.clear()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "%s\n", strings.Replace(s.store.Where(), " ", "\t", 1)) // schema or file
	fmt.Fprintf(w, "schema version\t%d\n", st.SchemaVersion)
	fmt.Fprintf(w, "scope\t%s\n", s.scope)
	total := 0
	for _, status := range memorykit.Statuses() {
		fmt.Fprintf(w, "records %s\t%d\n", status, st.ByStatus[status])
		total += st.ByStatus[status]
	}
	fmt.Fprintf(w, "records total\t%d\n", total)
	for _, p := range st.Pending {
		fmt.Fprintf(w, "pending embeddings (%s)\t%d\n", p.Profile, p.Scope)
	}
	fmt.Fprintf(w, "jobs queued\t%d\n", st.Scope.Jobs.Queued)
	fmt.Fprintf(w, "jobs leased\t%d\n", st.Scope.Jobs.Leased)
	fmt.Fprintf(w, "jobs failed\t%d\n", st.Scope.Jobs.Failed)
	fmt.Fprintf(w, "jobs done\t%d\n", st.Scope.Jobs.Done)
	for _, p := range st.Pending {
		fmt.Fprintf(w, "pending embeddings (%s, all projects)\t%d\n", p.Profile, p.All)
	}
	fmt.Fprintf(w, "jobs queued (all projects)\t%d\n", st.Jobs.Queued)
	fmt.Fprintf(w, "jobs leased (all projects)\t%d\n", st.Jobs.Leased)
	fmt.Fprintf(w, "jobs failed (all projects)\t%d\n", st.Jobs.Failed)
	fmt.Fprintf(w, "jobs done (all projects)\t%d\n", st.Jobs.Done)
	return w.Flush()
}

// rebuildIdleRounds is how many rounds in a row may find nothing to lease
// while records are still pending before the rebuild gives up.
const rebuildIdleRounds = 10

func runRebuild(ctx context.Context, c *cli, o *options) error {
	s, err := openSession(ctx, o)
	if err != nil {
		return err
	}
	defer s.store.Close()
	clk := clock.New()
	emb, err := rebuildEmbedder(o, clk)
	if err != nil {
		return err
	}
	// Deleting vectors is no lifecycle action, but it is an operator's:
	// the same authorizer decides.
	if err := memorykit.Authorize(ctx, operatorAuthorizer{operator: s.operator, scope: s.scope}, s.operator, memorykit.PermReview, s.scope); err != nil {
		return err
	}
	deleted, err := s.store.DeleteEmbeddings(ctx, emb.Profile(), s.scope)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "deleted %d embeddings of %s in %s\n", deleted, emb.Profile(), s.scope)

	backoff := memorykit.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2}
	w, err := embedworker.New(embedworker.Config{
		Store: s.store, Embedder: emb, Clock: clk, Logger: zap.NewNop(), Events: memorykit.DiscardEvents{},
		WorkerID: "cli:" + o.operator, LeaseTTL: 2 * time.Minute, BatchSize: o.batch, PollInterval: time.Second,
		EmbedDeadline: time.Minute, Retry: backoff, StoreBackoff: backoff, HandBackTimeout: 5 * time.Second,
		Scope: &s.scope, // lease and count this project's records only
	})
	if err != nil {
		return err
	}
	// On a terminal a bar of the records stored out of those to embed;
	// otherwise one line per round.
	m := c.newMeter("embedding " + s.scope.String())
	m.start()
	storedBefore := 0 // stored before the round just reported
	p, err := w.RunUntilEmpty(ctx, embedworker.RebuildOptions{
		MaxIdleRounds: rebuildIdleRounds,
		OnProgress: func(p embedworker.Progress) {
			if m != nil {
				// p.Pending was counted before the round.
				m.progress(p.Stored, storedBefore+p.Pending)
				storedBefore = p.Stored
				return
			}
			fmt.Fprintf(c.out, "rebuild: round %d, leased %d, stored %d, pending before the round %d\n",
				p.Rounds, p.Leased, p.Stored, p.Pending)
		},
	})
	m.clear()
	if err != nil {
		fmt.Fprintf(c.out, "rebuild stopped: %d rounds, %d stored, %d parked, %d pending\n", p.Rounds, p.Stored, p.Parked, p.Pending)
		return err
	}
	fmt.Fprintf(c.out, "rebuild done: %d rounds, %d stored, %d pending in %s\n", p.Rounds, p.Stored, p.Pending, s.scope)
	return nil
}

// rebuildEmbedder builds the embedder the rebuild flags name. The API key
// comes from the environment variable --api-key-env names, never from a
// flag, and is never printed.
func rebuildEmbedder(o *options, clk clock.Clock) (memorykit.Embedder, error) {
	switch o.embedder {
	case "openai":
		return embedder.NewOpenAI(embedder.OpenAIConfig{
			BaseURL: o.url, APIKey: o.getenv(o.apiKeyEnv), Model: o.model, Profile: o.profile,
			Dimension: o.dimension, MaxBatch: o.batch, Timeout: 30 * time.Second, Clock: clk,
		})
	case "ollama":
		return embedder.NewOllama(embedder.OllamaConfig{
			BaseURL: o.url, Model: o.model, Profile: o.profile,
			Dimension: o.dimension, MaxBatch: o.batch, Timeout: 30 * time.Second, Clock: clk,
		})
	default:
		return embedder.NewLocalProfile(o.profile)
	}
}

func runCandidatesList(ctx context.Context, c *cli, o *options) error {
	s, err := openSession(ctx, o)
	if err != nil {
		return err
	}
	defer s.store.Close()
	cands, err := s.review.ListCandidates(ctx, s.operator, s.scope, reviewer.Page{Limit: o.limit, AfterID: o.after})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%d candidates in %s\n", len(cands), s.scope)
	for _, cand := range cands {
		r := cand.Record
		// Key and content were written by a model or a user: quote them, so
		// control characters cannot reach the terminal.
		fmt.Fprintf(c.out, "%s  %s  key=%s  version=%d  by=%s:%s\n  content=%s\n",
			r.ID, r.Kind, strconv.Quote(r.Key), r.Version, r.CreatedBy.Kind, r.CreatedBy.ID, strconv.Quote(r.Content))
		printHints(c, cand)
	}
	if len(cands) == o.limit {
		fmt.Fprintf(c.out, "more: --after %s\n", cands[len(cands)-1].Record.ID)
	}
	return nil
}

// printHints prints a candidate's review hints under it: the active record
// it would supersede and the similar active records, keys and content
// quoted like the candidate's.
func printHints(c *cli, cand reviewer.Candidate) {
	if sup := cand.Supersedes; sup != nil {
		fmt.Fprintf(c.out, "  supersedes %s  %s  key=%s  version=%d\n    content=%s\n",
			sup.ID, sup.Kind, strconv.Quote(sup.Key), sup.Version, strconv.Quote(sup.Content))
	} else if cand.HintsDegraded == "" {
		fmt.Fprintln(c.out, "  supersedes nothing")
	}
	for _, h := range cand.Similar {
		fmt.Fprintf(c.out, "  similar %s  %s  key=%s  version=%d  score=%.4f  reason=%s\n    content=%s\n",
			h.ID, h.Kind, strconv.Quote(h.Key), h.Version, h.Score, h.Reason, strconv.Quote(h.Content))
	}
	if cand.HintsDegraded != "" {
		fmt.Fprintf(c.out, "  hints degraded: %s\n", cand.HintsDegraded)
	}
}

// decision is a reviewer action as a method expression, such as
// (*reviewer.Reviewer).Activate.
type decision func(*reviewer.Reviewer, context.Context, memorykit.Principal, memorykit.Scope, reviewer.Decision) (memorykit.Record, error)

// runDecision runs one reviewer action as the operator.
func runDecision(act decision) func(context.Context, *cli, *options) error {
	return func(ctx context.Context, c *cli, o *options) error {
		s, err := openSession(ctx, o)
		if err != nil {
			return err
		}
		defer s.store.Close()
		rec, err := act(s.review, ctx, s.operator, s.scope, reviewer.Decision{ID: o.id, ExpectVersion: o.expectVersion, Reason: o.reason})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.out, "%s: %s, version %d, by %s:%s\n", rec.ID, rec.Status, rec.Version, rec.TouchedBy.Kind, rec.TouchedBy.ID)
		return nil
	}
}

func runAudit(ctx context.Context, c *cli, o *options) error {
	s, err := openSession(ctx, o)
	if err != nil {
		return err
	}
	defer s.store.Close()
	revs, err := s.review.History(ctx, s.operator, s.scope, o.id)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "VERSION\tACTION\tACTOR\tSTATUS\tAT\tSNAPSHOT\tREASON")
	for _, v := range revs {
		snapshot := "kept"
		if v.ContentHash == "" {
			snapshot = "scrubbed"
		}
		fmt.Fprintf(w, "%d\t%s\t%s:%s\t%s\t%s\t%s\t%s\n", v.Version, v.Action, v.Actor.Kind, v.Actor.ID, v.Status,
			v.At.UTC().Format(time.RFC3339), snapshot, strconv.Quote(v.Reason))
	}
	return w.Flush()
}

// purgeJSON is the deletion report as printed by purge.
type purgeJSON struct {
	Tenant       string    `json:"tenant"`
	Project      string    `json:"project"`
	Operator     string    `json:"operator"`
	ReasonCode   string    `json:"reason_code"`
	Records      int       `json:"records"`
	RecordIDs    []string  `json:"record_ids"`
	Revisions    int       `json:"revisions"`
	Embeddings   int       `json:"embeddings"`
	Jobs         int       `json:"jobs"`
	QueueEntries int       `json:"queue_entries"`
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at"`
	Digest       string    `json:"digest"`
}

func runPurge(ctx context.Context, c *cli, o *options) error {
	s, err := openSession(ctx, o)
	if err != nil {
		return err
	}
	defer s.store.Close()
	// The purge is one transaction with no counts until it ends: on a
	// terminal, a spinner says it is under way.
	m := c.newMeter("purging " + s.scope.String())
	m.start()
	rep, err := s.review.Purge(ctx, s.operator, s.scope, o.reasonCode)
	m.clear()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(c.out)
	enc.SetIndent("", "  ")
	return enc.Encode(purgeJSON{
		Tenant: rep.Scope.TenantID, Project: rep.Scope.SubjectID, Operator: rep.Actor.ID, ReasonCode: rep.Reason,
		Records: rep.Records, RecordIDs: rep.RecordIDs, Revisions: rep.Revisions, Embeddings: rep.Embeddings,
		Jobs: rep.Jobs, QueueEntries: rep.QueueEntries, StartedAt: rep.StartedAt, FinishedAt: rep.FinishedAt, Digest: rep.Digest,
	})
}

// errCanaryFound fails verify-erased when the text was found.
var errCanaryFound = errors.New("the text occurs in the database (see the list above)")

func runVerifyErased(ctx context.Context, c *cli, o *options) error {
	scope, err := memorykit.ProjectScope(o.tenant, o.project)
	if err != nil {
		return usagef("--tenant and --project must name a valid project Scope")
	}
	if o.sqlite != "" {
		return verifySQLite(ctx, c, o, scope)
	}
	cfg, err := pgx.ParseConfig(o.dsn)
	if err != nil {
		return usagef("--dsn does not parse")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return dbError("cannot connect to the database", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	m := c.newMeter("searching " + scope.String())
	m.start()
	hits, err := pgstore.VerifyErased(ctx, conn, o.schema, scope, o.canary)
	m.clear()
	if err != nil {
		return err
	}
	return reportHits(c, "table\tcolumn\trow", len(hits), func(i int) string {
		return fmt.Sprintf("%s\t%s\t%s", hits[i].Table, hits[i].Column, hits[i].Row)
	})
}

// reportHits prints "not found", or a table of the n places the canary
// was found (header and rows tab-separated) and returns errCanaryFound.
func reportHits(c *cli, header string, n int, row func(i int) string) error {
	if n == 0 {
		fmt.Fprintln(c.out, "not found")
		return nil
	}
	w := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, header)
	for i := range n {
		fmt.Fprintln(w, row(i))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return errCanaryFound
}

// verifySQLite looks for the canary in the Scope's rows of the SQLite
// file (decoded) and in the raw bytes of the file and its WAL: every
// page, free pages included.
func verifySQLite(ctx context.Context, c *cli, o *options, scope memorykit.Scope) error {
	m := c.newMeter("searching " + scope.String() + " and the file's bytes")
	m.start()
	hits, err := sqlitestore.VerifyErased(ctx, o.sqlite, scope, o.canary)
	m.clear()
	if err != nil {
		return err
	}
	return reportHits(c, "file\toffset\ttable\tcolumn\trow", len(hits), func(i int) string {
		h := hits[i]
		return fmt.Sprintf("%s\t%d\t%s\t%s\t%s", h.File, h.Offset, h.Table, h.Column, h.Row)
	})
}
