// Command transcript is the operator's tool for a segmented transcript store: it runs
// a demo of concurrent replicas, imports and exports Pi session files, appends
// entries, lists, prints, draws, verifies and restores sessions from a bucket.
//
// Every subcommand takes the global flags --store URL (env TRANSCRIPT_STORE, default
// file://./transcripts), --ns NAMESPACE (default "default"), --agent ID and
// --session ID, and --json where it prints a listing or a summary. Flags are GNU
// style (--flag value or --flag=value), may stand before or after the subcommand
// and precede file arguments. Results go to stdout, progress and diagnostics to
// stderr. Commands that only read never create anything.
//
// Exit codes: 0 success, 1 failure or corruption found (a missing store, namespace
// or session is a failure that says "not found"), 2 usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// The exit codes and error kinds every command shares (see internal/cli).
var (
	errProblems = cmdcli.ErrProblems
	errHelp     = cmdcli.ErrHelp
)

func usagef(format string, args ...any) error { return cmdcli.Usagef(format, args...) }

func exitCode(err error, stderr io.Writer) int {
	return cmdcli.ExitCode(err, stderr, "transcript help")
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

func commands() []command {
	return []command{
		{"demo", "play concurrent replicas on one session, then merge, compact and restore it", runDemo},
		{"import", "import a Pi session file (v1, v2, v3) as a session", runImport},
		{"export", "write a session as a Pi v3 session file", runExport},
		{"append", "write entries read from stdin (JSONL) as one new segment", runAppend},
		{"cat", "print a session's merged entries as JSONL", runCat},
		{"context", "print the context the model sees, as Pi builds it", runContext},
		{"tree", "draw a session's tree: branches, writers, labels, the active leaf", runTree},
		{"ls", "list the sessions of a namespace with counts, bytes, last update", runLs},
		{"follow", "upload the sessions a running Pi writes, as it writes them", runFollow},
		{"restore", "disaster recovery: rebuild local session files from the bucket", runRestore},
		{"verify", "check every segment and session tree of a namespace", runVerify},
		{"stats", "segments per level, bytes, compression ratio, sessions", runStats},
		{"outbox", "list the stuck sessions of a mirror outbox; release one", runOutbox},
	}
}

// cliEnv carries the streams and environment of a run.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	out := cmdcli.NewCheckedWriter(stdout)
	err := runCommand(ctx, args, stdin, out, stderr)
	// Problems found and reported (errProblems) are lost too when their report is.
	if werr := out.Err(); werr != nil && (err == nil || errors.Is(err, errProblems)) {
		return fmt.Errorf("write output: %w", werr)
	}
	return err
}

func runCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &cliEnv{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		args = append([]string{"help"}, args[1:]...)
	}
	name, rest, err := cmdcli.SplitCommand(args, cmdcli.GlobalValueFlags, []string{"json", cmdcli.VersionFlag})
	if err != nil {
		return err
	}
	switch {
	case name == "" && slices.Contains(rest, "--"+cmdcli.VersionFlag):
		_, err := fmt.Fprintln(stdout, cmdcli.Version())
		return err
	case name == "":
		printUsage(stderr)
		return usagef("no command given")
	case name == "help":
		// "help --help" and "help -h" ask for help too, and "help --version" for
		// the version: each answers on stdout with exit 0, as on every command.
		if len(rest) == 0 || rest[0] == "-h" || rest[0] == "--help" {
			printUsage(stdout)
			return nil
		}
		if rest[0] == "--"+cmdcli.VersionFlag {
			_, err := fmt.Fprintln(stdout, cmdcli.Version())
			return err
		}
		if c, ok := findCommand(rest[0]); ok {
			return c.run(ctx, env, []string{"--help"})
		}
		return unknownCommand(rest[0])
	}
	if c, ok := findCommand(name); ok {
		return c.run(ctx, env, rest)
	}
	return unknownCommand(name)
}

// findCommand returns the subcommand called name.
func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// unknownCommand is the usage error for name, naming the nearest command.
func unknownCommand(name string) error {
	names := []string{"help"}
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if s := cmdcli.Suggest(name, names); s != "" {
		return usagef("unknown command %q (did you mean %q?)", name, s)
	}
	return usagef("unknown command %q", name)
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, `transcript: a segmented transcript store on object storage

Usage: transcript COMMAND [flags] [FILE]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Global flags (before or after the command, before file arguments):
  --store URL       the store (env TRANSCRIPT_STORE, default %s):
                      file://./rel/dir, file:///abs/dir   a directory laid out like a bucket
                      s3://BUCKET/PREFIX?endpoint=HOST:PORT&insecure=true&create=true&timeout=5s
                                        S3 or MinIO; credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY;
                                        timeout bounds each request (default 30s)
                      mem://            in memory (gone when the command ends)
  --ns NAMESPACE    namespace (tenant or user), default "default"
  --agent ID        agent id
  --session ID      session id
  --json            print a listing or summary as JSON

Commands that only read (all but demo, import, append and follow) never create anything: a
store directory or bucket that does not exist is "not found" (create=true is ignored).

Exit codes: 0 ok, 1 failure or corruption found (a missing store, namespace or session
says "not found"), 2 usage.

Examples:
  transcript demo
  transcript import --agent coder --session s1 session.jsonl
  transcript tree --agent coder --session s1
  transcript ls --json
  transcript restore --store file:///mnt/bucket-copy --out ./restored
  transcript follow --store 's3://transcripts/prod?endpoint=minio:9000'      # on each machine running Pi
  transcript restore --layout pi --out ~/.pi/agent/sessions --store ...        # after a disaster

Run 'transcript help COMMAND' (or 'transcript COMMAND --help') for a command's
flags; 'transcript --version' prints the version.
`, cmdcli.DefaultStoreURL)
}
