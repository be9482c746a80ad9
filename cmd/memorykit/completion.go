package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/goagents/memorykit/embedder"
)

// completionSummary is the completion command's line in the help.
const completionSummary = "print the shell completion script for bash, zsh or fish"

// completionCommand is 'memorykit completion bash|zsh|fish': the script
// goes to the output, for the shell to load.
func completionCommand(c *cli) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: completionSummary,
		Long: capitalize(completionSummary) + `.

The script completes commands, flags and the values of --embedder and
--profile. Load it in the current shell, or install it for every new one:

  bash:  source <(memorykit completion bash)
         memorykit completion bash > /etc/bash_completion.d/memorykit
  zsh:   memorykit completion zsh > "${fpath[1]}/_memorykit"   (then start a new shell)
  fish:  memorykit completion fish > ~/.config/fish/completions/memorykit.fish

bash needs the bash-completion package.`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("name one shell: bash, zsh or fish")
			}
			switch args[0] {
			case "bash", "zsh", "fish":
				return nil
			}
			return usagef("the shell must be bash, zsh or fish")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(c.out, true)
			case "zsh":
				return root.GenZshCompletion(c.out)
			default:
				return root.GenFishCompletion(c.out, true)
			}
		},
	}
}

// completeFlags registers the value completions of a command's flags:
// the fixed choices of --embedder and the local profiles for --profile;
// no file names for flags whose value is not a file.
func completeFlags(cmd *cobra.Command) {
	fixed := func(values ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
	}
	none := fixed()
	for name, complete := range map[string]cobra.CompletionFunc{
		"embedder": fixed("local", "openai", "ollama"),
		"profile":  fixed(embedder.LocalProfile, embedder.LocalV2Profile),
		"dsn":      none, "schema": none, "tenant": none, "project": none, "operator": none,
		"id": none, "reason": none, "after": none, "canary": none, "reason-code": none,
		"url": none, "model": none, "dimension": none, "api-key-env": none, "batch": none,
		"limit": none, "expect-version": none,
	} {
		if cmd.Flags().Lookup(name) != nil {
			// Registering twice is the only error, and each flag is
			// registered once here.
			_ = cmd.RegisterFlagCompletionFunc(name, complete)
		}
	}
}

// genDocsCommand is the hidden 'memorykit gen-docs DIR': it writes the
// command reference, one Markdown page per command, into DIR
// (docs/cli in the repository).
func genDocsCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-docs DIR",
		Short:  "write the command reference as Markdown pages into DIR",
		Hidden: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("name the directory to write into")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return genDocs(cmd.Root(), args[0])
		},
	}
}

// genDocs writes the reference of root's tree into dir, without the
// generator's date line, so the pages change only when the commands do.
func genDocs(root *cobra.Command, dir string) error {
	var mark func(*cobra.Command)
	mark = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, sub := range c.Commands() {
			mark(sub)
		}
	}
	mark(root)
	// Pages of commands that no longer exist go too.
	old, err := filepath.Glob(filepath.Join(dir, "memorykit*.md"))
	if err != nil {
		return fmt.Errorf("gen-docs: %w", err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("gen-docs: %w", err)
		}
	}
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("gen-docs: %w", err)
	}
	return nil
}
