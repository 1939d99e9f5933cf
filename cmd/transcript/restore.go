package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/transcriptstore/transcript/sessiontree"
)

const restoreUsage = `
Usage: transcript restore [flags] [[NAMESPACE/]AGENT/SESSION ...]

Rebuilds local session files from the bucket alone: for each given session, or every
session of the store (or of --namespace), it union-merges the segments and writes
{root}/{namespace}/agents/{agent}/sessions/{session}.jsonl and .log.jsonl. Sessions
that already have local files are skipped unless --force. Progress goes to stderr.

Examples:
  transcript restore --root /var/lib/agents
  transcript restore --store 's3://transcripts?endpoint=127.0.0.1:9000&insecure=true' --namespace acme
  transcript restore --root ./restored default/coder/6d4c2f18
`

func runRestore(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "restore", restoreUsage)
	root := fs.String("root", defaultRoot, "directory of the local session files")
	force := fs.Bool("force", false, "replace local files that exist already")
	if err := parse(fs, args); err != nil {
		return err
	}
	s, refs, err := sf.openSessions(ctx, fs.Args())
	if err != nil {
		return err
	}
	defer s.Close()
	var restored, skipped, failed int
	for i, ref := range refs {
		fmt.Fprintf(env.stderr, "[%d/%d] %s\n", i+1, len(refs), ref)
		ctxPath := filepath.Join(sessiontree.SessionDir(*root, ref.Namespace, ref.AgentID), ref.SessionID+sessiontree.ContextSuffix)
		if _, err := os.Stat(ctxPath); err == nil {
			if !*force {
				skipped++
				fmt.Fprintf(env.stderr, "  skipped: %s exists (use --force)\n", ctxPath)
				continue
			}
			logPath := filepath.Join(sessiontree.SessionDir(*root, ref.Namespace, ref.AgentID), ref.SessionID+sessiontree.LogSuffix)
			if err := errors.Join(os.Remove(ctxPath), ignoreNotExist(os.Remove(logPath))); err != nil {
				return err
			}
		}
		tree, err := restoreTree(ctx, s, ref, *root)
		if err == nil {
			err = tree.Flush(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed++
			fmt.Fprintf(env.stdout, "%s: %v\n", ref, err)
			continue
		}
		restored++
		fmt.Fprintf(env.stdout, "%s\t%d entries\t%s\n", ref, tree.Len(), tree.ContextPath())
	}
	fmt.Fprintf(env.stderr, "restored %d, skipped %d, failed %d\n", restored, skipped, failed)
	if failed > 0 {
		return errProblems
	}
	return nil
}

func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
