package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const importUsage = `
Usage: transcript import [flags] FILE.jsonl

Imports a Pi session file (version 1, 2 or 3; older versions are migrated
deterministically) as the session --agent/--session of --ns: the header and
every entry the store does not hold yet become one new segment. Importing the same
file again changes nothing.

A file with a malformed line, or a last line torn by a crash, is refused (each
such line is named on stderr) unless --skip-malformed imports the rest: the
entries Pi itself would load from that file.

Examples:
  transcript import --agent coder --session s1 ~/.pi/sessions/2026-09-25.jsonl
  transcript import --store 's3://transcripts/prod?endpoint=127.0.0.1:9000&insecure=true' --agent a --session s FILE.jsonl
`

// importSummary is import's result.
type importSummary struct {
	Session string `json:"session"`
	Lines   int    `json:"lines"` // the header and the entries
	Added   int    `json:"added"`
	Segment string `json:"segment,omitempty"`
	// Segments lists every segment written when the entries needed more than one
	// (each holds at most segment.DefaultTargetSegmentSize of JSONL).
	Segments []string `json:"segments,omitempty"`
	Existing bool     `json:"existing"`
	// Skipped counts the lines --skip-malformed left out.
	Skipped int `json:"skipped,omitempty"`
}

func runImport(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "import", importUsage, true)
	writer := fs.String("writer", "", "writer id in the segment key (default: host name and random hex)")
	skipMalformed := fs.Bool("skip-malformed", false, "import a file with malformed or torn lines without those lines (each is reported on stderr)")
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("import takes one FILE.jsonl after its flags")
	}
	ref, err := sf.ref("import")
	if err != nil {
		return err
	}
	w, err := newWriter(*writer)
	if err != nil {
		return err
	}
	path := fs.Arg(0)
	lines, skipped, err := importLines(ctx, env, ref, path, *skipMalformed)
	if err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	s, err := sf.openStoreToWrite(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := writeSession(ctx, s, ref, lines, w, false)
	if err != nil {
		return fmt.Errorf("import %s: %w", path, err)
	}
	sum := importSummary{Session: ref.Norm().String(), Lines: len(lines), Added: res.fresh, Existing: res.existing, Skipped: skipped}
	sum.Segment, sum.Segments = res.keys()
	if sf.json {
		return writeJSON(env.stdout, sum)
	}
	var skippedNote string
	if skipped > 0 {
		skippedNote = fmt.Sprintf("\t%d skipped", skipped)
	}
	if sum.Added == 0 {
		_, err = fmt.Fprintf(env.stdout, "%s\t%d lines\tunchanged (already imported)%s\n", sum.Session, sum.Lines, skippedNote)
		return err
	}
	as := sum.Segment
	if len(sum.Segments) > 1 {
		as = strings.Join(sum.Segments, " ")
	}
	_, err = fmt.Fprintf(env.stdout, "%s\t%d lines\t%d added as %s%s\n", sum.Session, sum.Lines, sum.Added, as, skippedNote)
	return err
}

// importLines parses (and migrates) the Pi session file at path and returns the
// lines a first flush of it would upload: the header, then every entry. A file
// with malformed or torn lines is refused unless skipMalformed, which leaves
// those lines out and returns how many it left out.
func importLines(ctx context.Context, env *cliEnv, ref transcript.TranscriptRef, path string, skipMalformed bool) ([][]byte, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	scratch, err := os.MkdirTemp("", "transcript-import-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(scratch)
	who := sessiontree.Identity{Namespace: ref.Namespace}
	tree, rep, err := sessiontree.Import(sessiontree.Config{Root: scratch, NoSync: true}, who, ref.AgentID, ref.SessionID, f)
	if err != nil {
		return nil, 0, err
	}
	reportLoad(env, path, rep, skipMalformed)
	skipped := len(rep.Malformed) + min(rep.TornBytes, 1)
	if skipped > 0 && !skipMalformed {
		return nil, 0, fmt.Errorf("%d malformed lines (--skip-malformed imports the rest): %w", skipped, pi.ErrInvalidEntry)
	}
	// The session is held now; what comes next (the segments) is garbage once
	// written, so the heap is bounded as the read commands bound theirs.
	if st, err := f.Stat(); err == nil {
		boundHeap(st.Size())
	}
	// What the imported tree's first Flush would hand its uploader: the header,
	// then every entry in order (Import leaves them all pending). Taken from the
	// tree itself, because a Flush would also write the scratch tree's log and
	// context files, twice the file on disk and in memory, only to delete them
	// (TestImportLines_AsAFirstFlush holds the two equal).
	entries := tree.Entries()
	lines := make([][]byte, 0, len(entries)+1)
	lines = append(lines, tree.Header().Raw())
	for _, e := range entries {
		lines = append(lines, e.Raw())
	}
	return lines, skipped, nil
}

// newWriter returns the writer named id, or a random one for "".
func newWriter(id string) (*transcript.Writer, error) {
	if id == "" {
		return transcript.NewRandomWriter(), nil
	}
	w, err := transcript.NewWriter(id)
	if err != nil {
		return nil, usagef("--writer %q: %v", id, err)
	}
	return w, nil
}

// reportLoad prints what a load or import skipped, on stderr; dropping says
// whether the torn last line is left out (else the caller refuses the file, and
// nothing is dropped).
func reportLoad(env *cliEnv, what string, rep sessiontree.LoadReport, dropping bool) {
	switch {
	case rep.TornBytes > 0 && dropping:
		fmt.Fprintf(env.stderr, "%s: dropped a torn last line (%d bytes)\n", what, rep.TornBytes)
	case rep.TornBytes > 0:
		fmt.Fprintf(env.stderr, "%s: torn last line (%d bytes without a newline: a write cut short)\n", what, rep.TornBytes)
	}
	for _, m := range rep.Malformed {
		fmt.Fprintf(env.stderr, "%s: malformed line: %v\n", what, m)
	}
	for _, c := range rep.Conflicts {
		fmt.Fprintf(env.stderr, "%s: kept the first of two different entries with one id: %v\n", what, c)
	}
}

// restoreTree rebuilds ref from the store into local files under root (written by
// the tree's first Flush).
func restoreTree(ctx context.Context, s sessiontree.StoreReader, ref transcript.TranscriptRef, root string) (*sessiontree.Tree, error) {
	who := sessiontree.Identity{Namespace: ref.Namespace}
	tree, _, err := sessiontree.Restore(ctx, sessiontree.Config{Root: root, Store: s}, who, ref.AgentID, ref.SessionID)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, fmt.Errorf("%w (or it has no session header)", errSessionNotFound(ref))
	}
	return tree, err
}

const exportUsage = `
Usage: transcript export [flags]

Writes the session --agent/--session of --ns, union-merged from the store (a strict
session: the segments its head commits, as transcript-serve reads it), as a Pi v3
session file (header line first, then the entries) to stdout or to --out FILE
(written atomically), which Pi opens as is.

Examples:
  transcript export --agent coder --session s1 > session.jsonl
  transcript export --ns acme --agent coder --session s1 --out session.jsonl
`

func runExport(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "export", exportUsage, false)
	out := fs.String("out", "", "write to this file instead of stdout (atomically)")
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	// A missing store or session is "not found" as readLean says it; only a
	// session whose segments hold no header gets the suffix, below.
	res, ref, err := sf.readLean(ctx, "export")
	if err != nil {
		return err
	}
	sess := newLeanSession(res, nil)
	if sess.header < 0 {
		return fmt.Errorf("%w (or it has no session header)", errSessionNotFound(ref))
	}
	write := func(w io.Writer) error { _, err := sess.writeExport(w); return err }
	if *out == "" {
		if err := write(env.stdout); err != nil {
			return err
		}
		lostEntries(env, "export", ref, res)
		return nil
	}
	if err := fsutil.WriteFileAtomic(*out, false, write); err != nil {
		return err
	}
	lostEntries(env, "export", ref, res)
	_, err = fmt.Fprintf(env.stdout, "wrote %s/%s/%s (%d entries and the header) to %s\n", sf.Namespace, sf.Agent, sf.Session, sess.n, *out)
	return err
}

const contextUsage = `
Usage: transcript context [flags]

Prints, as JSON {"messages":[...],"thinkingLevel":"...","model":{...}|null}, the
context the model sees at the session's active leaf (or at --leaf ID), built exactly
as Pi builds it. The session is --agent/--session of --ns in the store, or a local Pi
session file (any version) with --file.

Examples:
  transcript context --agent coder --session s1
  transcript context --file session.jsonl --leaf 7a81b3c4
`

func runContext(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "context", contextUsage, false)
	file := fs.String("file", "", "read this Pi session file instead of the store")
	leaf := fs.String("leaf", "", "build the context at this entry id (default: the active leaf)")
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	switch {
	case *file != "" && sf.Session == "":
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		_, entries, rep, err := sessiontree.ParseSession(f)
		if err != nil {
			return fmt.Errorf("%s: %w", *file, err)
		}
		reportLoad(env, *file, rep, true)
		var at *string
		if *leaf != "" {
			if !slices.ContainsFunc(entries, func(e sessiontree.Entry) bool { return e.ID() == *leaf }) {
				return notFound("entry %q (--leaf)", *leaf)
			}
			at = leaf
		}
		c := pi.BuildContextFrom(entries, at)
		_, err = fmt.Fprintf(env.stdout, "%s\n", c.JSON())
		return err
	case *file == "":
		if sf.Agent == "" || sf.Session == "" {
			return usagef("context needs --agent and --session, or --file")
		}
		// The context is built from the merged entries as read, streamed: no
		// tree is materialised, on disk or in memory.
		res, ref, err := sf.readLean(ctx, "context")
		if err != nil {
			return err
		}
		sess := newLeanSession(res, func(id string, err error) {
			fmt.Fprintf(env.stderr, "skipped entry %s: %v\n", id, err)
		})
		if *leaf != "" && !sess.has(*leaf) {
			return notFound("entry %q (--leaf)", *leaf)
		}
		if err := sess.writeContext(env.stdout, *leaf); err != nil {
			return err
		}
		lostEntries(env, "context", ref, res)
		return nil
	default:
		return usagef("context takes --agent/--session or --file, not both")
	}
}
