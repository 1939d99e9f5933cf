package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

const importUsage = `
Usage: transcript import [flags] FILE...

Imports Pi session files (version 1, 2 or 3; older ones are migrated
deterministically) into the store: each file becomes a session of --agent, named by
--session or by the file's header id, written as one segment. With --root the local
session files are kept there too.

Examples:
  transcript import --agent coder ~/.pi/sessions/2026-09-25.jsonl
  transcript import --store 's3://transcripts?endpoint=127.0.0.1:9000&insecure=true' --agent coder *.jsonl
`

func runImport(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "import", importUsage)
	agent := fs.String("agent", "default-agent", "agent id the sessions belong to")
	session := fs.String("session", "", "session id (one FILE only; default: the file's header id)")
	root := fs.String("root", "", "keep the local session files under this directory (default: none)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("import needs at least one FILE")
	}
	if *session != "" && fs.NArg() > 1 {
		return usagef("--session takes one FILE only")
	}
	s, err := sf.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	up := &mirror.Sync{Store: s, Writer: transcript.NewRandomWriter()}
	for _, path := range fs.Args() {
		if err := importFile(ctx, env, up, sf.namespace, *agent, *session, *root, path); err != nil {
			return fmt.Errorf("import %s: %w", path, err)
		}
	}
	return nil
}

func importFile(ctx context.Context, env *cliEnv, up mirror.Uploader, namespace, agent, session, root, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if session == "" {
		h, _, _, err := sessiontree.ParseSession(f)
		if err != nil {
			return err
		}
		session = h.ID()
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	dir := root
	if dir == "" {
		if dir, err = os.MkdirTemp("", "transcript-import-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	rc := sessiontree.RuntimeContext{Namespace: namespace}
	tree, rep, err := sessiontree.Import(sessiontree.Config{Root: dir, Uploader: up}, rc, agent, session, f)
	if err != nil {
		return err
	}
	reportLoad(env, path, rep)
	if err := tree.Flush(ctx); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "%s\t%d entries\n", tree.Ref(), tree.Len())
	return nil
}

// reportLoad prints what a load or import skipped, on stderr.
func reportLoad(env *cliEnv, what string, rep sessiontree.LoadReport) {
	if rep.TornBytes > 0 {
		fmt.Fprintf(env.stderr, "%s: dropped a torn last line (%d bytes)\n", what, rep.TornBytes)
	}
	for _, m := range rep.Malformed {
		fmt.Fprintf(env.stderr, "%s: skipped malformed line: %v\n", what, m)
	}
	for _, c := range rep.Conflicts {
		fmt.Fprintf(env.stderr, "%s: kept the first of two different entries with one id: %v\n", what, c)
	}
}

// restoreTree rebuilds ref from the store into local files under root.
func restoreTree(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, root string) (*sessiontree.Tree, error) {
	rc := sessiontree.RuntimeContext{Namespace: ref.Namespace}
	tree, _, err := sessiontree.Restore(ctx, sessiontree.Config{Root: root, Remote: s}, rc, ref.AgentID, ref.SessionID)
	if errors.Is(err, sessiontree.ErrNotFound) || errors.Is(err, transcript.ErrNotFound) {
		return nil, fmt.Errorf("session %s: %w", ref, transcript.ErrNotFound)
	}
	return tree, err
}

// fetchTree parses the session argument arg, opens the store and rebuilds the
// session from it in a scratch directory, which cleanup removes.
func (f *storeFlags) fetchTree(ctx context.Context, arg string) (tree *sessiontree.Tree, cleanup func(), err error) {
	ref, err := parseRef(arg, f.namespace)
	if err != nil {
		return nil, nil, err
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	scratch, err := os.MkdirTemp("", "transcript-session-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.RemoveAll(scratch) }
	if tree, err = restoreTree(ctx, s, ref, scratch); err != nil {
		cleanup()
		return nil, nil, err
	}
	return tree, cleanup, nil
}

const exportUsage = `
Usage: transcript export [flags] [NAMESPACE/]AGENT/SESSION

Writes the session, union-merged from the store, as a Pi v3 session file (header line,
then entries) to stdout or to -o FILE, which Pi opens as is.

Examples:
  transcript export default/coder/6d4c2f18 > session.jsonl
  transcript export -o session.jsonl acme/coder/s1
`

func runExport(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "export", exportUsage)
	out := fs.String("o", "", "write to this file instead of stdout (atomically)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("export takes one session")
	}
	tree, cleanup, err := sf.fetchTree(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	defer cleanup()
	if *out == "" {
		return tree.Export(env.stdout)
	}
	return fsutil.WriteFileAtomic(*out, false, tree.Export)
}

const contextUsage = `
Usage: transcript context [flags] ([NAMESPACE/]AGENT/SESSION | --file FILE)

Prints, as JSON {"messages":[...],"thinkingLevel":"...","model":{...}|null}, the
context the model sees at the session's active leaf (or at --leaf ID), built exactly as
Pi builds it. The session comes from the store, or from a local Pi session file
(any version) with --file.

Examples:
  transcript context default/coder/6d4c2f18
  transcript context --file session.jsonl --leaf 7a81b3c4
`

func runContext(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "context", contextUsage)
	file := fs.String("file", "", "read this Pi session file instead of the store")
	leaf := fs.String("leaf", "", "build the context at this entry id (default: the active leaf)")
	if err := parse(fs, args); err != nil {
		return err
	}
	var entries []sessiontree.Entry
	switch {
	case *file != "" && fs.NArg() == 0:
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		_, es, rep, err := sessiontree.ParseSession(f)
		if err != nil {
			return fmt.Errorf("%s: %w", *file, err)
		}
		reportLoad(env, *file, rep)
		entries = es
	case *file == "" && fs.NArg() == 1:
		tree, cleanup, err := sf.fetchTree(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		defer cleanup()
		entries = tree.Entries()
	default:
		return usagef("context takes one session or --file FILE")
	}
	var at *string
	if *leaf != "" {
		at = leaf
	}
	c := sessiontree.BuildContextFrom(entries, at)
	_, err := fmt.Fprintf(env.stdout, "%s\n", c.JSON())
	return err
}
