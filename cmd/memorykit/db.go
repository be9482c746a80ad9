package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/pgstore"
	"github.com/goagents/memorykit/reviewer"
	"github.com/goagents/memorykit/sqlitestore"
	"github.com/goagents/memorykit/storekit"
)

// defaultProfile is the profile of the local embedder, the one the CLI
// rebuilds with unless --profile names the other local one.
const defaultProfile = embedder.LocalProfile

// isLocalProfile reports whether profile names a local embedder the CLI
// can rebuild with.
func isLocalProfile(profile string) bool {
	_, err := embedder.NewLocalProfile(profile)
	return err == nil
}

// hostSecretFile is the file the embedded example Host keeps its
// tombstone secret in, beside its SQLite file, when
// $MEMORYKIT_TOMBSTONE_SECRET is not set.
const hostSecretFile = "tombstone.secret"

// cliLimits are the CLI's write limits. The CLI writes no content (its
// validator refuses all), so only MaxListSize matters: it bounds a page.
func cliLimits() memorykit.Limits {
	return memorykit.Limits{
		Version: 1, MaxKeyBytes: 256, MaxContentBytes: 16 << 10, MaxMetadataEntries: 16,
		MaxMetadataBytes: 4096, MaxSources: 16, MaxSourceBytes: 1024, MaxListSize: 500,
		MaxJobPayloadBytes: 64 << 10, MaxReasonBytes: 1024,
	}
}

// noContentWrites is the CLI's ContentValidator: the CLI never writes
// content, so any attempt is refused. The operator's own --reason on a
// lifecycle action (the only text the CLI stores) is accepted.
type noContentWrites struct{}

var errNoContentWrites = errors.New("the CLI writes no content")

// ValidateContent implements memorykit.ContentValidator.
func (noContentWrites) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	switch c.Action {
	case memorykit.ActionActivate, memorykit.ActionReject, memorykit.ActionForget, memorykit.ActionErase:
		if c.Content == "" && c.Key == "" {
			return nil
		}
	}
	return errNoContentWrites
}

// operatorAuthorizer grants the operator named on the command line read,
// review and erase on exactly the Scope named on the command line, and
// nothing else. It does not authenticate: the DSN holder is trusted.
type operatorAuthorizer struct {
	operator memorykit.Principal
	scope    memorykit.Scope
}

var errNotThisScope = errors.New("outside the command line's operator and Scope")

// Authorize implements memorykit.Authorizer.
func (a operatorAuthorizer) Authorize(_ context.Context, p memorykit.Principal, perm memorykit.Permission, s memorykit.Scope) error {
	if p != a.operator || s != a.scope {
		return errNotThisScope
	}
	switch perm {
	case memorykit.PermRead, memorykit.PermReview, memorykit.PermErase:
		return nil
	}
	return errNotThisScope
}

// cliStore is what the commands need of a store: pgstore's or
// sqlitestore's.
type cliStore interface {
	storekit.Store
	storekit.Purger
	// CountScope returns a Scope's pending embeddings and jobs.
	CountScope(ctx context.Context, profile string, scope memorykit.Scope) (ScopeCounts, error)
	// Where names the schema or file, for the report.
	Where() string
	Close()
}

// ScopeCounts is one Scope's pending embeddings of a profile and its jobs
// by state.
type ScopeCounts struct {
	PendingEmbeddings int
	Jobs              storekit.JobCounts
}

// pgCLI adapts pgstore to cliStore.
type pgCLI struct{ *pgstore.Store }

func (p pgCLI) CountScope(ctx context.Context, profile string, scope memorykit.Scope) (ScopeCounts, error) {
	c, err := p.Store.CountScope(ctx, profile, scope)
	return ScopeCounts(c), err
}

func (p pgCLI) Where() string { return "schema " + p.Schema() }

// sqliteCLI adapts sqlitestore to cliStore.
type sqliteCLI struct{ *sqlitestore.Store }

func (s sqliteCLI) CountScope(ctx context.Context, profile string, scope memorykit.Scope) (ScopeCounts, error) {
	c, err := s.Store.CountScope(ctx, profile, scope)
	return ScopeCounts(c), err
}

func (s sqliteCLI) Where() string { return "file " + s.Path() }

// Close closes the file; a failure to close loses nothing (every write
// was committed when it returned).
func (s sqliteCLI) Close() { _ = s.Store.Close() }

// session is an open store plus the Scope, operator and reviewer of one
// scoped command.
type session struct {
	store    cliStore
	scope    memorykit.Scope
	operator memorykit.Principal
	review   *reviewer.Reviewer
	version  int
}

// openTimeout bounds how long the CLI waits for the database: pgstore.Open
// retries an unreachable or restarting server for as long as its context
// lives.
const openTimeout = 30 * time.Second

// openStore opens pgstore or sqlitestore, which migrate the schema when
// needed.
func openStore(ctx context.Context, o *options) (cliStore, error) {
	guard, err := memorykit.NewWriteGuard(cliLimits(), noContentWrites{})
	if err != nil {
		return nil, err
	}
	if o.tombstoneSecret == "" && o.sqlite != "" {
		// The embedded Host keeps its secret beside the file when the
		// variable is not set; read it from there.
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(o.sqlite), hostSecretFile)); err == nil {
			o.tombstoneSecret = strings.TrimSpace(string(b))
		}
	}
	if o.tombstoneSecret == "" {
		return nil, usagef("$MEMORYKIT_TOMBSTONE_SECRET is required (the secret that keys erased records' key digests; with --sqlite, the Host's " + hostSecretFile + " beside the file serves too)")
	}
	tombstones, err := memorykit.NewTombstoneKeyer([]byte(o.tombstoneSecret))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if o.sqlite != "" {
		s, err := sqlitestore.Open(ctx, o.sqlite, sqlitestore.Config{Clock: clock.New(), Guard: guard, Tombstones: tombstones})
		if err != nil {
			return nil, err
		}
		return sqliteCLI{s}, nil
	}
	s, err := pgstore.Open(ctx, o.dsn, pgstore.Config{Clock: clock.New(), Guard: guard, Tombstones: tombstones, Schema: o.schema, MaxConns: 4})
	if err != nil {
		return nil, err
	}
	return pgCLI{s}, nil
}

// supportedVersion is the schema version of the store the options name.
func supportedVersion(o *options) int {
	if o.sqlite != "" {
		return sqlitestore.SchemaVersion
	}
	return pgstore.SchemaVersion
}

// openSession checks that the schema exists at the supported version
// (only migrate may create or upgrade it), opens the store and builds the
// operator's reviewer.
func openSession(ctx context.Context, o *options) (*session, error) {
	scope, err := memorykit.ProjectScope(o.tenant, o.project)
	if err != nil {
		return nil, usagef("--tenant or --project is not a valid project Scope")
	}
	if o.sqlite != "" {
		if _, err := os.Stat(o.sqlite); errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("--sqlite: no such file: check the path (the Host keeps memorykit.db in its -data directory) or create it with 'memorykit migrate --sqlite FILE'")
		}
	}
	version, err := schemaVersion(ctx, o)
	if err != nil {
		return nil, err
	}
	switch {
	case version == 0:
		return nil, errors.New("the schema is not migrated: run 'memorykit migrate' first")
	case version != supportedVersion(o):
		return nil, errors.New("the schema version is not the one this binary supports: upgrade with 'memorykit migrate' or use a matching binary")
	}
	store, err := openStore(ctx, o)
	if err != nil {
		return nil, err
	}
	operator := memorykit.Principal{TenantID: o.tenant, Actor: memorykit.Actor{Kind: memorykit.ActorOperator, ID: o.operator}}
	rv, err := reviewer.New(reviewer.Config{
		Store:      store,
		Authorizer: operatorAuthorizer{operator: operator, scope: scope},
		Events:     memorykit.DiscardEvents{}, // the audit trail records every change
		Clock:      clock.New(),
		// The command line has no embedding model: hints are ranked by
		// exact keys and full text.
		Hints: reviewer.HintConfig{Store: store, Policy: memorykit.RecallPolicyLexicalV1(), Logger: zap.NewNop()},
	})
	if err != nil {
		store.Close()
		return nil, err
	}
	return &session{store: store, scope: scope, operator: operator, review: rv, version: version}, nil
}

// schemaVersion reads the newest applied migration of the schema without
// changing anything: 0 when the schema has never been migrated. It reads
// pgstore's schema_migrations table directly, because pgstore.Open would
// migrate instead of report.
func schemaVersion(ctx context.Context, o *options) (int, error) {
	if o.sqlite != "" {
		return sqlitestore.FileSchemaVersion(ctx, o.sqlite)
	}
	cfg, err := pgx.ParseConfig(o.dsn)
	if err != nil {
		return 0, usagef("--dsn does not parse") // the parse error may quote the password
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, dbError("cannot connect to the database", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	schema := o.schema
	if schema == "" {
		schema = pgstore.DefaultSchema
	}
	table := pgx.Identifier{schema, "schema_migrations"}.Sanitize()
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		return 0, dbError("cannot read the schema", err)
	}
	if !exists {
		return 0, nil
	}
	var version int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+table).Scan(&version); err != nil {
		return 0, dbError("cannot read the schema version", err)
	}
	return version, nil
}

// dbError reports a driver failure by its SQLSTATE only: driver messages
// can quote stored values or connection details.
func dbError(what string, err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return errors.New(what + " (sqlstate " + pg.Code + ")")
	}
	return errors.New(what)
}
