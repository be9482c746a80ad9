// Command memorykit is the operator's tool for a memorykit database on
// PostgreSQL (--dsn) or in an embedded Host's SQLite file (--sqlite FILE,
// with the Host stopped): migrate the schema, look at its state, rebuild
// embeddings, review candidates, forget, erase, and read the audit trail.
//
//	memorykit migrate --dsn "$DSN"
//	memorykit status --sqlite memorykit-data/memorykit.db --tenant acme --project apollo --operator ops-ana
//	memorykit status --tenant acme --project apollo --operator ops-ana
//	memorykit candidates list --tenant acme --project apollo --operator ops-ana
//	memorykit candidates activate --id mem_… --reason "checked" --tenant acme --project apollo --operator ops-ana
//
// Every command but migrate works on exactly one project Scope, named with
// --tenant and --project, and acts as the operator named with --operator,
// whose identity goes into the audit trail of every change.
//
// 'memorykit --help' lists the commands, 'memorykit <command> --help'
// shows one with its flags, and docs/cli in the repository holds the same
// reference as Markdown pages (go generate ./cmd/memorykit writes them).
// 'memorykit completion bash|zsh|fish' prints a shell completion script.
// Exit status: 0 done, 1 the command failed, 2 bad command line (nothing
// was done).
//
// On a terminal, embeddings rebuild draws a progress bar, and status,
// purge and verify-erased a spinner while they work through the project;
// piped or redirected, the output is plain lines only.
//
// # Trust
//
// Whoever holds the DSN (or can write the SQLite file) can read and
// change the database directly, so the CLI trusts its user: a CLI-local
// authorizer grants the --operator identity read, review and erase on
// exactly the --tenant/--project given,
// and nothing else. It does not authenticate anybody; it keeps each
// command inside the Scope it was asked about and makes the audit say who
// acted. Protect the DSN like the database password it contains.
//
// Output holds identifiers, counts and statuses; only `candidates list`
// prints memory content (quoted, so it cannot drive the terminal), because
// a reviewer has to read a candidate to decide on it. Under each candidate
// it prints the review hints: the active record activation would
// supersede, and up to three similar active records of the project with
// their score and reason code. The CLI has no embedding model, so it ranks
// them by exact keys and full text (memorykit.RecallPolicyLexicalV1).
package main

//go:generate go run . gen-docs ../../docs/cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// Progress bars are drawn only when the output is a terminal; piped
	// or redirected output gets plain lines.
	c := &cli{out: os.Stdout, errOut: os.Stderr, tty: term.IsTerminal(int(os.Stdout.Fd()))}
	code := runCLIWith(ctx, c, os.Args[1:], os.Getenv)
	stop()
	os.Exit(code)
}
