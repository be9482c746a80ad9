package pgtest_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/internal/testsupport/testkit"
	"github.com/goagents/memorykit/internal/testsupport/testkit/pgtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// unreachable names a port nothing listens on, so connecting fails fast.
const unreachable = "postgres://nobody:secret-pw@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"

func TestDSNSkipOrFail(t *testing.T) {
	cases := []struct {
		name, dsn, require string
		skipped, failed    bool
	}{
		{name: "missing", dsn: "", require: "", skipped: true},
		{name: "missing, required", dsn: "", require: "1", failed: true},
		{name: "missing, require not exactly 1", dsn: "", require: "true", skipped: true},
		{name: "set", dsn: "host=db.invalid dbname=x", require: ""},
		{name: "set, required", dsn: "host=db.invalid dbname=x", require: "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(pgtest.EnvDSN, c.dsn)
			t.Setenv(pgtest.EnvRequire, c.require)
			var got string
			p := testkit.RunProbe(t, func(tb testing.TB) { got = pgtest.DSN(tb) })
			if p.Skipped() != c.skipped || p.Failed() != c.failed {
				t.Fatalf("skipped=%v failed=%v, want %v %v (%s)", p.Skipped(), p.Failed(), c.skipped, c.failed, p.Messages())
			}
			if !c.skipped && !c.failed && got != c.dsn {
				t.Fatalf("DSN = %q, want %q", got, c.dsn)
			}
			if (c.skipped || c.failed) && !strings.Contains(p.Messages(), pgtest.EnvDSN) {
				t.Fatalf("message %q does not name %s", p.Messages(), pgtest.EnvDSN)
			}
		})
	}
}

func TestUnusable(t *testing.T) {
	unavailable := memorykit.WrapError("test.open", memorykit.ErrUnavailable, "no_database", errors.New("refused"))
	other := memorykit.WrapError("test.open", memorykit.ErrInvalidConfig, "bad_schema", nil)
	cases := []struct {
		name, require   string
		err             error
		skipped, failed bool
	}{
		{"unavailable", "", unavailable, true, false},
		{"unavailable, required", "1", unavailable, false, true},
		{"other kind", "", other, false, true},
		{"plain error", "", errors.New("boom"), false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(pgtest.EnvRequire, c.require)
			after := false
			p := testkit.RunProbe(t, func(tb testing.TB) {
				pgtest.Unusable(tb, "open store", c.err)
				after = true
			})
			if p.Skipped() != c.skipped || p.Failed() != c.failed || after {
				t.Fatalf("skipped=%v failed=%v returned=%v, want %v %v false (%s)", p.Skipped(), p.Failed(), after, c.skipped, c.failed, p.Messages())
			}
			if !strings.HasPrefix(p.Messages(), "open store: ") {
				t.Fatalf("message %q does not say what failed", p.Messages())
			}
		})
	}
}

func TestName(t *testing.T) {
	valid := regexp.MustCompile(`^mk_x_[0-9a-f]{12}$`)
	seen := make(map[string]bool)
	for range 1000 {
		n := pgtest.Name("mk_x_")
		if !valid.MatchString(n) {
			t.Fatalf("Name = %q", n)
		}
		if seen[n] {
			t.Fatalf("Name repeated %q", n)
		}
		seen[n] = true
	}
}

func TestWithAppName(t *testing.T) {
	cases := []struct{ name, dsn, app string }{
		{"url", "postgres://u:p@127.0.0.1:5432/db?sslmode=disable", "mk_app_1"},
		{"url replaces", "postgres://u:p@127.0.0.1:5432/db?application_name=old&sslmode=disable", "mk_app_2"},
		{"keyword/value", "host=127.0.0.1 port=5432 user=u dbname=db sslmode=disable", "mk_app_3"},
		{"keyword/value replaces", "host=127.0.0.1 application_name=old user=u dbname=db", "mk_app_4"},
		{"keyword/value quoting", "host=127.0.0.1 user=u dbname=db", `it's a \ test`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := pgtest.WithAppName(t, c.dsn, c.app)
			cfg, err := pgconn.ParseConfig(out)
			if err != nil {
				t.Fatalf("ParseConfig(%q): %v", out, err)
			}
			if got := cfg.RuntimeParams["application_name"]; got != c.app {
				t.Fatalf("application_name = %q, want %q (dsn %q)", got, c.app, out)
			}
			if cfg.User != "u" || cfg.Database != "db" || cfg.Host != "127.0.0.1" {
				t.Fatalf("other settings changed: user %q db %q host %q", cfg.User, cfg.Database, cfg.Host)
			}
		})
	}
	t.Run("bad url", func(t *testing.T) {
		p := testkit.RunProbe(t, func(tb testing.TB) { pgtest.WithAppName(tb, "postgres://u:hunter2@[::1/db", "a") })
		if !p.Failed() {
			t.Fatal("an unparsable URL passed")
		}
		if strings.Contains(p.Messages(), "hunter2") {
			t.Fatalf("the failure echoes the DSN: %q", p.Messages())
		}
	})
}

// TestUnreachableDatabase: a DSN that names no database skips Connect's
// test, or fails it when required; a schema cleanup that cannot connect
// only logs unless required.
func TestUnreachableDatabase(t *testing.T) {
	for _, require := range []string{"", "1"} {
		t.Run("require="+require, func(t *testing.T) {
			t.Setenv(pgtest.EnvRequire, require)
			p := testkit.RunProbe(t, func(tb testing.TB) { pgtest.Connect(tb, unreachable) })
			if p.Skipped() != (require == "") || p.Failed() != (require == "1") {
				t.Fatalf("Connect: skipped=%v failed=%v (%s)", p.Skipped(), p.Failed(), p.Messages())
			}
			if strings.Contains(p.Messages(), "secret-pw") {
				t.Fatalf("the message carries the password: %q", p.Messages())
			}
			p = testkit.RunProbe(t, func(tb testing.TB) { pgtest.Schema(tb, unreachable) })
			if p.Failed() != (require == "1") || !strings.Contains(p.Messages(), "drop schema") {
				t.Fatalf("Schema cleanup: failed=%v (%s)", p.Failed(), p.Messages())
			}
			p = testkit.RunProbe(t, func(tb testing.TB) {
				if n := pgtest.Terminate(tb, unreachable, "mk_none"); n != 0 {
					tb.Errorf("Terminate = %d", n)
				}
			})
			if !p.Failed() || p.Skipped() {
				t.Fatalf("Terminate without a database: failed=%v skipped=%v", p.Failed(), p.Skipped())
			}
		})
	}
}

// TestSchemaDropped: the schema Schema names is gone once the test that
// asked for it ends, with what was created in it.
func TestSchemaDropped(t *testing.T) {
	dsn := pgtest.DSN(t)
	admin := pgtest.Connect(t, dsn)
	ctx := context.Background()
	var name string
	t.Run("use", func(t *testing.T) {
		name = pgtest.Schema(t, dsn)
		if !strings.HasPrefix(name, pgtest.SchemaPrefix) {
			t.Fatalf("schema %q", name)
		}
		id := pgx.Identifier{name}.Sanitize()
		if _, err := admin.Exec(ctx, "CREATE SCHEMA "+id+"; CREATE TABLE "+id+".t (x int)"); err != nil {
			t.Fatal(err)
		}
		if !schemaExists(t, admin, name) {
			t.Fatal("schema not created")
		}
	})
	if schemaExists(t, admin, name) {
		t.Fatalf("schema %s survived its test", name)
	}
	t.Run("never created", func(t *testing.T) {
		pgtest.Schema(t, dsn) // the drop must not fail on a missing schema
	})
}

func schemaExists(t *testing.T, conn *pgx.Conn, name string) bool {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestTerminate: Terminate ends exactly the backends tagged with its
// application_name.
func TestTerminate(t *testing.T) {
	dsn := pgtest.DSN(t)
	admin := pgtest.Connect(t, dsn)
	ctx := context.Background()
	app := pgtest.Name("mk_pgtest_app_")
	tagged := pgtest.WithAppName(t, dsn, app)
	var victims []*pgx.Conn
	for range 2 {
		c := pgtest.Connect(t, tagged)
		var got string
		if err := c.QueryRow(ctx, "SELECT current_setting('application_name')").Scan(&got); err != nil || got != app {
			t.Fatalf("application_name = %q (%v), want %q", got, err, app)
		}
		victims = append(victims, c)
	}
	bystander := pgtest.Connect(t, pgtest.WithAppName(t, dsn, pgtest.Name("mk_pgtest_other_")))

	if n := pgtest.Terminate(t, dsn, app); n != 2 {
		t.Fatalf("Terminate = %d, want 2", n)
	}
	for i, c := range victims {
		if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
			t.Fatalf("connection %d still works after Terminate", i)
		}
	}
	for name, c := range map[string]*pgx.Conn{"admin": admin, "bystander": bystander} {
		if _, err := c.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatalf("%s connection was ended: %v", name, err)
		}
	}
	if n := pgtest.Terminate(t, dsn, app); n != 0 {
		t.Fatalf("second Terminate = %d, want 0", n)
	}
}
