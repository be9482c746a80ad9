package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/reviewer"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command ran and failed (database, not found, conflict...)
	exitUsage = 2 // bad command line: nothing was done
)

// options holds every flag; each command registers the ones it uses.
type options struct {
	dsn, schema                string
	sqlite                     string // the SQLite file, instead of a DSN
	tombstoneSecret            string
	tenant, project, operator  string
	id, reason, after, profile string
	canary, reasonCode         string
	expectVersion              int64
	limit, batch               int
	// embeddings rebuild: which embedder (local, openai, ollama) and,
	// for the HTTP ones, where and how to reach it.
	embedder, url, model, apiKeyEnv string
	dimension                       int
	getenv                          func(string) string
	// migrate --distribute: distribute the schema on a Citus coordinator.
	distribute bool
}

// command is one CLI command.
type command struct {
	name    string // "candidates list"
	summary string
	// scoped commands need --tenant, --project and --operator.
	scoped bool
	// flags registers the command's own flags (the common ones are added
	// for every command).
	flags func(fs *flag.FlagSet, o *options)
	// check validates the command's own flags; nil means none to check.
	check func(o *options) error
	run   func(ctx context.Context, c *cli, o *options) error
}

// cli is one invocation's output streams.
type cli struct {
	out, errOut io.Writer
}

// usageError is bad input on the command line: exit 2, nothing done.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func idFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.id, "id", "", "record ID (required)")
}

func decisionFlags(fs *flag.FlagSet, o *options) {
	idFlag(fs, o)
	fs.StringVar(&o.reason, "reason", "", "audit note stored with the action")
	fs.Int64Var(&o.expectVersion, "expect-version", 0, "act only if the record is at this version (0: any)")
}

func checkID(o *options) error {
	if o.id == "" {
		return usagef("--id is required")
	}
	if memorykit.ValidateID("cli", "id", o.id) != nil {
		return usagef("--id is not a valid record ID")
	}
	if o.expectVersion < 0 {
		return usagef("--expect-version must not be negative")
	}
	if memorykit.CheckReason("cli", o.reason) != nil {
		return usagef("--reason must be at most %d bytes of text", memorykit.MaxReasonBytes)
	}
	return nil
}

var commands = []command{
	{
		name:    "migrate",
		summary: "create or upgrade the schema (and the vector extension) to the version this binary supports",
		flags:   distributeFlag,
		check:   checkDistribute,
		run:     runMigrate,
	},
	{
		name:    "status",
		summary: "schema version, record counts by status, pending embeddings and job counts for the project and for all projects (numbers only)",
		scoped:  true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.profile, "profile", "", "embedding profile whose pending records are counted (default: each local profile, memorykit/hash-v1 and memorykit/hash-v2)")
		},
		check: func(o *options) error {
			if o.profile != "" && memorykit.ValidateProfile("cli", o.profile) != nil {
				return usagef("--profile is not a valid embedding profile")
			}
			return nil
		},
		run: runStatus,
	},
	{
		name:    "embeddings rebuild",
		summary: "delete the project's embeddings and embed the project's records until none is pending (local, OpenAI-compatible or Ollama embedder)",
		scoped:  true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.IntVar(&o.batch, "batch", 64, "records per embedding call")
			fs.StringVar(&o.embedder, "embedder", "local", "embedder: local, openai (any OpenAI-compatible server) or ollama")
			fs.StringVar(&o.profile, "profile", defaultProfile, "embedding profile to rebuild: memorykit/hash-v1 or memorykit/hash-v2 for local; the Host's RecallPolicy profile (e.g. openai/text-embedding-3-small@1536) otherwise")
			fs.StringVar(&o.url, "url", "", "openai/ollama: the server's base URL, e.g. https://api.openai.com or http://localhost:11434")
			fs.StringVar(&o.model, "model", "", "openai/ollama: the model name, e.g. text-embedding-3-small or nomic-embed-text")
			fs.IntVar(&o.dimension, "dimension", 0, "openai/ollama: the length of every vector (the profile's dimension)")
			fs.StringVar(&o.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "openai: the environment variable holding the API key (the key itself is never a flag); unset or empty sends no key")
		},
		check: checkRebuild,
		run:   runRebuild,
	},
	{
		name:    "candidates list",
		summary: "list candidates waiting for review, by ID, each with the active record it would supersede and similar active records",
		scoped:  true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.IntVar(&o.limit, "limit", 50, "page size")
			fs.StringVar(&o.after, "after", "", "continue after this record ID")
		},
		check: func(o *options) error {
			if o.limit < 1 || o.limit > cliLimits().MaxListSize {
				return usagef("--limit must be between 1 and %d", cliLimits().MaxListSize)
			}
			if o.after != "" && memorykit.ValidateID("cli", "after", o.after) != nil {
				return usagef("--after is not a valid record ID")
			}
			return nil
		},
		run: runCandidatesList,
	},
	{
		name: "candidates activate", summary: "activate a candidate; it supersedes the active record with its kind and key",
		scoped: true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Activate),
	},
	{
		name: "candidates reject", summary: "reject a candidate",
		scoped: true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Reject),
	},
	{
		name: "forget", summary: "forget an active memory: out of every recall path, audit kept",
		scoped: true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Forget),
	},
	{
		name: "erase", summary: "erase a forgotten, rejected or superseded memory to a content-free tombstone",
		scoped: true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Erase),
	},
	{
		name: "audit", summary: "print a memory's audit trail, oldest first",
		scoped: true, flags: idFlag, check: checkID, run: runAudit,
	},
	{
		name:    "purge",
		summary: "erase the whole project: every memory in every status, every extraction job and embedding; prints the deletion report as JSON",
		scoped:  true,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.reasonCode, "reason-code", "", "reason code recorded on every purge revision, such as project_closed (required)")
		},
		check: func(o *options) error {
			if memorykit.CheckReasonCode("cli", o.reasonCode) != nil {
				return usagef("--reason-code must be 1 to 64 of a-z, 0-9 and _")
			}
			return nil
		},
		run: runPurge,
	},
	{
		name:    "verify-erased",
		summary: "look for a text in every column of the project's rows, decoded and in every stored encoding (and, for SQLite, in every byte of the file and its WAL); exit 1 and list where it occurs, 0 when it occurs nowhere",
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.tenant, "tenant", "", "tenant ID of the erased project (required)")
			fs.StringVar(&o.project, "project", "", "project ID of the erased project (required)")
			fs.StringVar(&o.canary, "canary", "", "the erased text to look for, matched ignoring case and also in NFKC form (required)")
		},
		check: func(o *options) error {
			if _, err := memorykit.ProjectScope(o.tenant, o.project); err != nil {
				return usagef("--tenant and --project must name a valid project Scope")
			}
			if strings.TrimSpace(o.canary) == "" {
				return usagef("--canary is required")
			}
			return nil
		},
		run: runVerifyErased,
	},
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{out: stdout, errOut: stderr}
	if len(args) == 0 {
		c.usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return run(ctx, append(args[1:], "--help"), stdout, stderr, getenv)
		}
		c.usage(stdout)
		return exitOK
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		if group := groupOf(args[0]); group != "" {
			if len(args) > 1 && isHelp(args[1]) {
				c.groupUsage(stdout, group)
				return exitOK
			}
			fmt.Fprintf(stderr, "memorykit %s: missing or unknown subcommand\n", group)
			c.groupUsage(stderr, group)
			return exitUsage
		}
		// The unknown word is not echoed: it may be a value typed in the
		// wrong place (a reason, a DSN).
		fmt.Fprintf(stderr, "memorykit: unknown command; run 'memorykit --help'\n")
		return exitUsage
	}

	var o options
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The environment is read after parsing, so --help never prints a DSN
	// (and its password) as a default.
	fs.StringVar(&o.dsn, "dsn", "", "PostgreSQL DSN (default $MEMORYKIT_DSN)")
	fs.StringVar(&o.schema, "schema", "", "PostgreSQL schema holding memorykit's tables (default memorykit)")
	fs.StringVar(&o.sqlite, "sqlite", "", "SQLite file of an embedded Host (e.g. memorykit-data/memorykit.db), instead of --dsn; stop the Host first")
	if cmd.scoped {
		fs.StringVar(&o.tenant, "tenant", "", "tenant ID (required)")
		fs.StringVar(&o.project, "project", "", "project ID (required)")
		fs.StringVar(&o.operator, "operator", "", "operator identity recorded in the audit (required)")
	}
	if cmd.flags != nil {
		cmd.flags(fs, &o)
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.commandUsage(stdout, cmd, fs)
			return exitOK
		}
		fmt.Fprintf(stderr, "memorykit %s: %s\nrun 'memorykit %s --help'\n", cmd.name, flagProblem(fs, err), cmd.name)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "memorykit %s: unexpected argument (every value needs its --flag)\nrun 'memorykit %s --help'\n", cmd.name, cmd.name)
		return exitUsage
	}
	if o.dsn == "" && o.sqlite == "" {
		o.dsn = getenv("MEMORYKIT_DSN")
	}
	if o.sqlite != "" {
		// The Host joins its data directory and file name, which cleans
		// the path; the CLI cleans it the same way, so "//tmp/x/memorykit.db"
		// names the Host's "/tmp/x/memorykit.db".
		o.sqlite = filepath.Clean(o.sqlite)
	}
	o.tombstoneSecret = getenv("MEMORYKIT_TOMBSTONE_SECRET")
	o.getenv = getenv
	err := checkCommon(cmd, &o)
	if err == nil && cmd.check != nil {
		err = cmd.check(&o)
	}
	if err == nil {
		err = cmd.run(ctx, c, &o)
	}
	if err == nil {
		return exitOK
	}
	// Every error here is a content-free *memorykit.Error or one of the
	// CLI's own fixed texts.
	fmt.Fprintf(stderr, "memorykit %s: %v\n", cmd.name, err)
	if next := nextStep(cmd.name, err); next != "" {
		fmt.Fprintf(stderr, "next: %s\n", next)
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "run 'memorykit %s --help'\n", cmd.name)
		return exitUsage
	}
	return exitError
}

// flagProblem describes a flag parsing error without quoting what was
// typed: the flag package's messages repeat unknown flag names and invalid
// values, either of which may be a secret typed in the wrong place. Only a
// flag that fs defines is named.
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	defined := func(marker string) string {
		i := strings.Index(msg, marker)
		if i < 0 {
			return ""
		}
		name := msg[i+len(marker):]
		if j := strings.IndexAny(name, ": "); j >= 0 {
			name = name[:j]
		}
		if fs.Lookup(name) == nil {
			return ""
		}
		return name
	}
	switch {
	case strings.HasPrefix(msg, "flag needs an argument"):
		if name := defined("-"); name != "" {
			return "--" + name + " needs a value"
		}
		return "a flag needs a value"
	case strings.HasPrefix(msg, "invalid value"), strings.HasPrefix(msg, "invalid boolean value"):
		name := defined(" for flag -")
		if name == "" {
			name = defined(" for -")
		}
		if name != "" {
			return "--" + name + " has an invalid value"
		}
		return "a flag has an invalid value"
	default:
		return "unknown flag or bad flag syntax"
	}
}

// checkCommon validates the DSN presence and, for scoped commands, the
// Scope and operator.
func checkCommon(cmd *command, o *options) error {
	switch {
	case o.dsn != "" && o.sqlite != "":
		return usagef("--dsn and --sqlite exclude each other")
	case o.sqlite != "" && o.schema != "":
		return usagef("--schema is for --dsn")
	case o.dsn == "" && o.sqlite == "":
		return usagef("--dsn (or $MEMORYKIT_DSN) or --sqlite is required")
	}
	if !cmd.scoped {
		return nil
	}
	for _, f := range []struct{ name, v string }{{"tenant", o.tenant}, {"project", o.project}, {"operator", o.operator}} {
		if f.v == "" {
			return usagef("--%s is required", f.name)
		}
		if memorykit.ValidateID("cli", f.name, f.v) != nil {
			return usagef("--%s must be 1 to %d letters, digits or . _ - : @", f.name, memorykit.MaxIDBytes)
		}
	}
	return nil
}

// lookup finds the command named by the first one or two arguments.
func lookup(args []string) (*command, []string) {
	for i := range commands {
		words := strings.Fields(commands[i].name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == commands[i].name {
			return &commands[i], args[len(words):]
		}
	}
	return nil, nil
}

// groupOf returns name when it is the first word of a two-word command.
func groupOf(name string) string {
	for _, c := range commands {
		if first, _, two := strings.Cut(c.name, " "); two && first == name {
			return name
		}
	}
	return ""
}

func isHelp(s string) bool {
	switch s {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `memorykit: operate a memorykit database on PostgreSQL or SQLite.

usage: memorykit <command> [flags]

commands:
`)
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-21s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, `
Every command takes --dsn (or $MEMORYKIT_DSN) and --schema for PostgreSQL,
or --sqlite FILE for an embedded Host's SQLite file (which one process
opens at a time: stop the Host first). Every command
but migrate and verify-erased also takes --tenant, --project and --operator:
it works on that one project Scope only, and records the operator in the
audit trail. Commands that open the store need $MEMORYKIT_TOMBSTONE_SECRET,
the secret (32 bytes or more) that keys the digest erased memories keep of
their keys; use the same secret as the Host.
Whoever holds the DSN is trusted (see 'memorykit <command> --help').

Exit status: 0 done, 1 the command failed, 2 bad command line.
Run 'memorykit <command> --help' for a command's flags.
`)
}

func (c *cli) groupUsage(w io.Writer, group string) {
	fmt.Fprintf(w, "usage: memorykit %s <subcommand> [flags]\n\nsubcommands:\n", group)
	for _, cmd := range commands {
		if strings.HasPrefix(cmd.name, group+" ") {
			fmt.Fprintf(w, "  %-21s %s\n", cmd.name, cmd.summary)
		}
	}
}

func (c *cli) commandUsage(w io.Writer, cmd *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: memorykit %s [flags]\n\n%s.\n", cmd.name, cmd.summary)
	if cmd.scoped {
		fmt.Fprint(w, `
The command works on the one project Scope named by --tenant and --project,
as --operator. A CLI-local authorizer grants that operator read, review and
erase on exactly that Scope; the DSN holder is trusted, since the DSN alone
gives direct access to the database.
`)
	}
	fmt.Fprint(w, "\nflags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// checkRebuild validates the embeddings rebuild flags.
func checkRebuild(o *options) error {
	if o.batch < 1 || o.batch > cliLimits().MaxListSize {
		return usagef("--batch must be between 1 and %d", cliLimits().MaxListSize)
	}
	switch o.embedder {
	case "local":
		if !isLocalProfile(o.profile) {
			return usagef("--profile must be memorykit/hash-v1 or memorykit/hash-v2 with --embedder local; for another profile name its embedder with --embedder openai or ollama")
		}
		if o.url != "" || o.model != "" || o.dimension != 0 {
			return usagef("--url, --model and --dimension are for --embedder openai or ollama")
		}
	case "openai", "ollama":
		switch {
		case memorykit.ValidateProfile("cli", o.profile) != nil || isLocalProfile(o.profile):
			return usagef("--profile must name the remote model's profile, as the Host's RecallPolicy does (e.g. openai/text-embedding-3-small@1536)")
		case o.url == "":
			return usagef("--url is required with --embedder %s", o.embedder)
		case o.model == "":
			return usagef("--model is required with --embedder %s", o.embedder)
		case o.dimension < 1:
			return usagef("--dimension is required with --embedder %s (the length of the profile's vectors)", o.embedder)
		case o.batch > embedder.MaxBatchLimit:
			return usagef("--batch must be at most %d with --embedder %s", embedder.MaxBatchLimit, o.embedder)
		}
	default:
		return usagef("--embedder must be local, openai or ollama")
	}
	return nil
}
