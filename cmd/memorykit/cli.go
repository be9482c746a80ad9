package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/reviewer"
	"github.com/goagents/memorykit/storekit"
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

// command is one CLI command. The cobra tree is built from this table:
// a command's name is its words ("candidates list"), a two-word name puts
// it under a group command named by the first word.
type command struct {
	name    string // "candidates list"
	summary string
	// more is said in the command's help after the summary.
	more string
	// example is shown under the command's help and in its reference page.
	example string
	// scoped commands need --tenant, --project and --operator.
	scoped bool
	// flags registers the command's own flags (the common ones are added
	// for every command).
	flags func(fs *pflag.FlagSet, o *options)
	// check validates the command's own flags; nil means none to check.
	check func(o *options) error
	run   func(ctx context.Context, c *cli, o *options) error
}

// groups are the first words of two-word commands, with their summaries.
var groups = []struct{ name, summary string }{
	{"candidates", "review the candidates waiting for an operator: list, activate or reject them"},
	{"embeddings", "rebuild a project's embeddings"},
}

// cli is one invocation's output streams.
type cli struct {
	out, errOut io.Writer
	// tty is whether out is a terminal: long commands then draw a
	// progress bar on it instead of printing progress lines.
	tty bool
}

// usageError is bad input on the command line: exit 2, nothing done.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// flagError is a flag that did not parse; its text names at most a flag
// the command defines.
type flagError struct{ msg string }

func (e flagError) Error() string { return e.msg }

// reportedError is a usage failure whose message was printed already.
type reportedError struct{}

func (reportedError) Error() string { return "bad command line" }

func idFlag(fs *pflag.FlagSet, o *options) {
	fs.StringVar(&o.id, "id", "", "record ID (required)")
}

func decisionFlags(fs *pflag.FlagSet, o *options) {
	idFlag(fs, o)
	fs.StringVar(&o.reason, "reason", "", "audit note stored with the action")
	fs.Int64Var(&o.expectVersion, "expect-version", 0, "act only if the record is at this version (0: any)")
}

func checkID(o *options) error {
	if o.id == "" {
		return usagef("--id is required")
	}
	if storekit.ValidateID("cli", "id", o.id) != nil {
		return usagef("--id is not a valid record ID")
	}
	if o.expectVersion < 0 {
		return usagef("--expect-version must not be negative")
	}
	if storekit.CheckReason("cli", o.reason) != nil {
		return usagef("--reason must be at most %d bytes of text", storekit.MaxReasonBytes)
	}
	return nil
}

// scopeExample is the Scope and operator flags of the examples.
const scopeExample = "--tenant acme --project apollo --operator ops-ana"

var commands = []command{
	{
		name:    "migrate",
		summary: "create or upgrade the schema (and the vector extension) to the version this binary supports",
		example: "memorykit migrate --dsn \"$MEMORYKIT_DSN\"\nmemorykit migrate --sqlite memorykit-data/memorykit.db",
		flags:   distributeFlag,
		check:   checkDistribute,
		run:     runMigrate,
	},
	{
		name:    "status",
		summary: "schema version, record counts by status, pending embeddings and job counts for the project and for all projects (numbers only)",
		more:    "On a terminal a count of the records read runs while the command pages through the project.",
		example: "memorykit status " + scopeExample + "\nmemorykit status --sqlite memorykit-data/memorykit.db " + scopeExample,
		scoped:  true,
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.StringVar(&o.profile, "profile", "", "embedding profile whose pending records are counted (default: each local profile, memorykit/hash-v1 and memorykit/hash-v2)")
		},
		check: func(o *options) error {
			if o.profile != "" && storekit.ValidateProfile("cli", o.profile) != nil {
				return usagef("--profile is not a valid embedding profile")
			}
			return nil
		},
		run: runStatus,
	},
	{
		name:    "embeddings rebuild",
		summary: "delete the project's embeddings and embed the project's records until none is pending (local, OpenAI-compatible or Ollama embedder)",
		example: "memorykit embeddings rebuild " + scopeExample + "\n" +
			"memorykit embeddings rebuild --embedder ollama --url http://localhost:11434 --model nomic-embed-text \\\n" +
			"  --dimension 768 --profile ollama/nomic-embed-text@768 " + scopeExample,
		more: `On a terminal a bar shows the records embedded out of those to embed.
Otherwise the command prints one line per round:
  rebuild: round N, leased N, stored N, pending before the round N
and ends with "rebuild done: …" (or "rebuild stopped: …" and exit 1).`,
		scoped: true,
		flags: func(fs *pflag.FlagSet, o *options) {
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
		example: "memorykit candidates list " + scopeExample + "\nmemorykit candidates list --limit 20 --after mem_0123 " + scopeExample,
		scoped:  true,
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.IntVar(&o.limit, "limit", 50, "page size")
			fs.StringVar(&o.after, "after", "", "continue after this record ID")
		},
		check: func(o *options) error {
			if o.limit < 1 || o.limit > cliLimits().MaxListSize {
				return usagef("--limit must be between 1 and %d", cliLimits().MaxListSize)
			}
			if o.after != "" && storekit.ValidateID("cli", "after", o.after) != nil {
				return usagef("--after is not a valid record ID")
			}
			return nil
		},
		run: runCandidatesList,
	},
	{
		name: "candidates activate", summary: "activate a candidate; it supersedes the active record with its kind and key",
		example: "memorykit candidates activate --id mem_0123 --reason \"checked with the team\" " + scopeExample,
		scoped:  true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Activate),
	},
	{
		name: "candidates reject", summary: "reject a candidate",
		example: "memorykit candidates reject --id mem_0123 " + scopeExample,
		scoped:  true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Reject),
	},
	{
		name: "forget", summary: "forget an active memory: out of every recall path, audit kept",
		example: "memorykit forget --id mem_0123 --expect-version 2 " + scopeExample,
		scoped:  true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Forget),
	},
	{
		name: "erase", summary: "erase a forgotten, rejected or superseded memory to a content-free tombstone",
		example: "memorykit erase --id mem_0123 " + scopeExample,
		scoped:  true, flags: decisionFlags, check: checkID, run: runDecision((*reviewer.Reviewer).Erase),
	},
	{
		name: "audit", summary: "print a memory's audit trail, oldest first",
		example: "memorykit audit --id mem_0123 " + scopeExample,
		scoped:  true, flags: idFlag, check: checkID, run: runAudit,
	},
	{
		name:    "purge",
		summary: "erase the whole project: every memory in every status, every extraction job and embedding; prints the deletion report as JSON",
		more: `The purge runs in one transaction: on a terminal a spinner runs until it ends,
then the report is printed. Redirected, the output is the JSON report alone.`,
		example: "memorykit purge --reason-code project_closed " + scopeExample + " > purge-report.json",
		scoped:  true,
		flags: func(fs *pflag.FlagSet, o *options) {
			fs.StringVar(&o.reasonCode, "reason-code", "", "reason code recorded on every purge revision, such as project_closed (required)")
		},
		check: func(o *options) error {
			if storekit.CheckReasonCode("cli", o.reasonCode) != nil {
				return usagef("--reason-code must be 1 to 64 of a-z, 0-9 and _")
			}
			return nil
		},
		run: runPurge,
	},
	{
		name:    "verify-erased",
		summary: "look for a text in every column of the project's rows, decoded and in every stored encoding (and, for SQLite, in every byte of the file and its WAL); exit 1 and list where it occurs, 0 when it occurs nowhere",
		more: `The text is never printed: only where it occurs (table, column and row, or file and
offset). On a terminal a spinner runs during the search.`,
		example: "memorykit verify-erased --tenant acme --project apollo --canary \"the erased sentence\"",
		flags: func(fs *pflag.FlagSet, o *options) {
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

// run executes one command line and returns the exit code; out is not
// a terminal.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return runCLIWith(ctx, &cli{out: stdout, errOut: stderr}, args, getenv)
}

// runCLIWith executes one command line on c's streams and returns the
// exit code.
func runCLIWith(ctx context.Context, c *cli, args []string, getenv func(string) string) int {
	if len(args) == 0 {
		c.usage(c.errOut)
		return exitUsage
	}
	root := newRoot(c, getenv)
	root.SetArgs(singleDashFlags(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	name := "memorykit"
	if sub := commandName(cmd); sub != "" {
		name += " " + sub
	}
	var fe flagError
	switch {
	case errors.As(err, new(reportedError)):
		return exitUsage
	case errors.As(err, &fe):
		fmt.Fprintf(c.errOut, "%s: %s\n", name, fe.msg)
		fmt.Fprintf(c.errOut, "run '%s --help'\n", name)
		return exitUsage
	}
	// Every error here is a content-free *memorykit.Error or one of the
	// CLI's own fixed texts.
	fmt.Fprintf(c.errOut, "%s: %v\n", name, err)
	if next := nextStep(commandName(cmd), err); next != "" {
		fmt.Fprintf(c.errOut, "next: %s\n", next)
	}
	if errors.As(err, new(usageError)) {
		fmt.Fprintf(c.errOut, "run '%s --help'\n", name)
		return exitUsage
	}
	return exitError
}

// commandName is a command's words after "memorykit": "candidates list".
func commandName(cmd *cobra.Command) string {
	if cmd == nil {
		return ""
	}
	return strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), "memorykit"), " ")
}

// newRoot builds the command tree of one invocation: the commands of the
// table, the groups they sit in, help, completion and the hidden
// reference generator. Output goes to c's streams; getenv is read after
// parsing, so no help text ever shows a value from the environment.
func newRoot(c *cli, getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "memorykit <command>",
		Short: "operate a memorykit database on PostgreSQL or SQLite",
		Long: "memorykit operates a memorykit database on PostgreSQL (--dsn) or in an embedded Host's\n" +
			"SQLite file (--sqlite FILE, with the Host stopped): migrate the schema, look at its state,\n" +
			"rebuild embeddings, review candidates, forget, erase, and read the audit trail.\n\n" + commonHelp,
		Args:               cobra.ArbitraryArgs,
		SilenceErrors:      true,
		SilenceUsage:       true,
		DisableSuggestions: true, // a suggestion would echo what was typed next to it
		DisableAutoGenTag:  true, // the reference under docs/cli has no date in it
		CompletionOptions:  cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The unknown word is not echoed: it may be a value typed in
			// the wrong place (a reason, a DSN).
			fmt.Fprintf(c.errOut, "memorykit: unknown command; run 'memorykit --help'\n")
			return reportedError{}
		},
	}
	root.SetOut(c.out)
	root.SetErr(c.errOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return flagError{flagProblem(err)}
	})
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { c.help(cmd) })
	root.SetHelpCommand(helpCommand(c))

	groupCmds := map[string]*cobra.Command{}
	for _, g := range groups {
		name := g.name
		gc := &cobra.Command{
			Use:   name + " <subcommand>",
			Short: g.summary,
			Long:  capitalize(g.summary) + ".",
			Args:  cobra.ArbitraryArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				fmt.Fprintf(c.errOut, "memorykit %s: missing or unknown subcommand\n", name)
				c.groupUsage(c.errOut, name)
				return reportedError{}
			},
		}
		groupCmds[name] = gc
		root.AddCommand(gc)
	}
	for i := range commands {
		spec := &commands[i]
		parent := root
		word := spec.name
		if first, second, two := strings.Cut(spec.name, " "); two {
			parent, word = groupCmds[first], second
		}
		parent.AddCommand(leafCommand(c, spec, word, getenv))
	}
	root.AddCommand(completionCommand(c), genDocsCommand())
	var helpFlags func(*cobra.Command)
	helpFlags = func(cmd *cobra.Command) {
		cmd.Flags().BoolP("help", "h", false, "show this help")
		for _, sub := range cmd.Commands() {
			helpFlags(sub)
		}
	}
	helpFlags(root)
	return root
}

// commonHelp is what every command shares, for the root's help.
const commonHelp = `Every command takes --dsn (or $MEMORYKIT_DSN) and --schema for PostgreSQL,
or --sqlite FILE for an embedded Host's SQLite file (which one process
opens at a time: stop the Host first). Every command
but migrate and verify-erased also takes --tenant, --project and --operator:
it works on that one project Scope only, and records the operator in the
audit trail. Commands that open the store need $MEMORYKIT_TOMBSTONE_SECRET,
the secret (32 bytes or more) that keys the digest erased memories keep of
their keys; use the same secret as the Host.
Whoever holds the DSN is trusted (see 'memorykit <command> --help').

Exit status: 0 done, 1 the command failed, 2 bad command line.`

// trustHelp explains a scoped command's authorization.
const trustHelp = `The command works on the one project Scope named by --tenant and --project,
as --operator. A CLI-local authorizer grants that operator read, review and
erase on exactly that Scope; the DSN holder is trusted, since the DSN alone
gives direct access to the database.`

// leafCommand builds the cobra command of one table entry, word being its
// last word.
func leafCommand(c *cli, spec *command, word string, getenv func(string) string) *cobra.Command {
	var o options
	long := capitalize(spec.summary) + "."
	if spec.more != "" {
		long += "\n\n" + spec.more
	}
	if spec.scoped {
		long += "\n\n" + trustHelp
	}
	cmd := &cobra.Command{
		Use:     word,
		Short:   spec.summary,
		Long:    long,
		Example: indent(spec.example),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument (every value needs its --flag)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLeaf(cmd.Context(), c, spec, &o, getenv)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	// The environment is read after parsing, so --help never prints a DSN
	// (and its password) as a default.
	fs.StringVar(&o.dsn, "dsn", "", "PostgreSQL DSN (default $MEMORYKIT_DSN)")
	fs.StringVar(&o.schema, "schema", "", "PostgreSQL schema holding memorykit's tables (default memorykit)")
	fs.StringVar(&o.sqlite, "sqlite", "", "SQLite file of an embedded Host (e.g. memorykit-data/memorykit.db), instead of --dsn; stop the Host first")
	if spec.scoped {
		fs.StringVar(&o.tenant, "tenant", "", "tenant ID (required)")
		fs.StringVar(&o.project, "project", "", "project ID (required)")
		fs.StringVar(&o.operator, "operator", "", "operator identity recorded in the audit (required)")
	}
	if spec.flags != nil {
		spec.flags(fs, &o)
	}
	completeFlags(cmd)
	return cmd
}

// runLeaf finishes the options from the environment, checks them and
// runs the command.
func runLeaf(ctx context.Context, c *cli, spec *command, o *options, getenv func(string) string) error {
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
	if err := checkCommon(spec, o); err != nil {
		return err
	}
	if spec.check != nil {
		if err := spec.check(o); err != nil {
			return err
		}
	}
	return spec.run(ctx, c, o)
}

// helpCommand is 'memorykit help [command]'. Unlike cobra's own it does
// not repeat an unknown topic, and an unknown topic is bad input.
func helpCommand(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "show the help of memorykit or of one command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				fmt.Fprintf(c.errOut, "memorykit help: unknown command; run 'memorykit --help'\n")
				return reportedError{}
			}
			target.InitDefaultHelpFlag()
			c.help(target)
			return nil
		},
	}
}

// help prints a command's help on out.
func (c *cli) help(cmd *cobra.Command) {
	switch {
	case !cmd.HasParent():
		c.usage(c.out)
	case cmd.HasSubCommands():
		c.groupUsage(c.out, cmd.Name())
	default:
		c.commandUsage(c.out, cmd)
	}
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `memorykit: operate a memorykit database on PostgreSQL or SQLite.

usage: memorykit <command> [flags]

commands:
`)
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-21s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, "  %-21s %s\n", "completion", completionSummary)
	fmt.Fprint(w, "\n"+commonHelp+"\n"+`Run 'memorykit <command> --help' for a command's flags.
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

func (c *cli) commandUsage(w io.Writer, cmd *cobra.Command) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", cmd.UseLine(), cmd.Long)
	if cmd.Example != "" {
		fmt.Fprintf(w, "\nexamples:\n%s\n", cmd.Example)
	}
	if cmd.HasAvailableFlags() {
		fmt.Fprintf(w, "\nflags:\n%s", cmd.Flags().FlagUsages())
	}
}

// flagProblem describes a flag parsing error without quoting what was
// typed: unknown flag names and invalid values may be a secret typed in
// the wrong place. Only a flag that the command defines is named.
func flagProblem(err error) string {
	var required *pflag.ValueRequiredError
	var invalid *pflag.InvalidValueError
	switch {
	case errors.As(err, &required) && required.GetFlag() != nil:
		return "--" + required.GetFlag().Name + " needs a value"
	case errors.As(err, &required):
		return "a flag needs a value"
	case errors.As(err, &invalid) && invalid.GetFlag() != nil:
		return "--" + invalid.GetFlag().Name + " has an invalid value"
	case errors.As(err, &invalid):
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
		if storekit.ValidateID("cli", f.name, f.v) != nil {
			return usagef("--%s must be 1 to %d letters, digits or . _ - : @", f.name, storekit.MaxIDBytes)
		}
	}
	return nil
}

// singleDashFlags rewrites "-name" and "-name=value" to "--name…" when
// name is a long flag of the command the leading words name (or help),
// so command lines written for the standard flag package's single dash
// keep working. Values are never rewritten: the word after a flag that
// takes a value is skipped, and so is everything after "--".
func singleDashFlags(root *cobra.Command, args []string) []string {
	cmd, i := root, 0
	for ; i < len(args) && !strings.HasPrefix(args[i], "-"); i++ {
		next := findChild(cmd, args[i])
		if next == nil {
			break
		}
		cmd = next
	}
	out := append([]string(nil), args...)
	for ; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") {
			if len(name) < 2 || (name != "help" && cmd.Flags().Lookup(name) == nil) {
				continue
			}
			out[i] = "-" + a
		}
		if f := cmd.Flags().Lookup(name); f != nil && !hasValue && f.NoOptDefVal == "" {
			i++ // the flag's value
		}
	}
	return out
}

// findChild is cmd's subcommand named name, or nil.
func findChild(cmd *cobra.Command, name string) *cobra.Command {
	for _, sub := range cmd.Commands() {
		if sub.Name() == name {
			return sub
		}
	}
	return nil
}

// capitalize upper-cases the first letter of an ASCII sentence.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// indent indents every line of s by two spaces.
func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
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
		case storekit.ValidateProfile("cli", o.profile) != nil || isLocalProfile(o.profile):
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
