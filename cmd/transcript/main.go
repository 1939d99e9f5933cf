// Command transcript is the operator's tool for a segmented transcript store: it runs
// a demo session, imports and exports Pi session files, lists, prints, verifies and
// restores sessions from a bucket.
//
// Exit codes: 0 success, 1 failure or corruption found, 2 usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError marks a bad command line (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errProblems reports that a command ran but found problems (exit code 1); the
// problems were already printed.
var errProblems = errors.New("problems found")

func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "Error: %s\nRun 'transcript help' for usage.\n", ue.msg)
		return 2
	case errors.Is(err, errProblems):
		return 1
	default:
		fmt.Fprintf(stderr, "Error: %s\n", err)
		return 1
	}
}

var errHelp = errors.New("help shown")

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

func commands() []command {
	return []command{
		{"demo", "run a short agent session on a store and print its context", runDemo},
		{"import", "import a Pi session file (v1, v2, v3) into the store", runImport},
		{"export", "write a session from the store as a Pi v3 session file", runExport},
		{"ls", "list namespaces, agents, sessions or a session's segments", runLs},
		{"cat", "print a session's merged entries as JSONL", runCat},
		{"context", "print the context the model sees for a session", runContext},
		{"restore", "restore sessions from the store into local session files", runRestore},
		{"verify", "check every segment of the store (or of some sessions)", runVerify},
		{"stats", "count namespaces, sessions, segments and bytes", runStats},
	}
}

// cliEnv carries the streams every command writes to.
type cliEnv struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	env := &cliEnv{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			for _, c := range commands() {
				if c.name == args[1] {
					return c.run(ctx, env, []string{"-h"})
				}
			}
		}
		printUsage(stdout)
		if len(args) == 0 {
			return usagef("no command given")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	return usagef("unknown command %q", args[0])
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, `transcript: a segmented transcript store on object storage

Usage: transcript COMMAND [flags] [args]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Every command takes --store URL (default $TRANSCRIPT_STORE, else %s):
  mem://                      in memory
  file:///abs/dir, file://./rel/dir   a local directory laid out like a bucket
  s3://BUCKET/PREFIX?endpoint=HOST:PORT&insecure=true&region=R&create=true
                              S3 or MinIO; credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY

Examples:
  transcript demo
  transcript import --agent coder session.jsonl
  transcript ls acme/coder
  transcript verify --store 's3://transcripts/prod?endpoint=127.0.0.1:9000&insecure=true'

Run 'transcript help COMMAND' for a command's flags.
`, defaultStoreURL)
}
