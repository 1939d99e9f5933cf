package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

const appendUsage = `
Usage: transcript append [flags] < ENTRIES.jsonl

Reads entries (one JSON object per line, each with a string "type" and "id") on
stdin and writes those the session --agent/--session of --ns lacks as one new
segment, as one replica's flush would. Several appends running at once on one
session all land: segments are never overwritten. Appending the same input again
changes nothing (it says "unchanged").

It reads the session first and refuses, writing nothing: a malformed line; a new
session whose first line is not its session header ({"type":"session",...}); a
session header in the input that the session does not hold (a session has one
header, the first entry of its first segment); an entry id the session holds with
other bytes; a strict session (transcript-serve advances its head). --force
writes every line as given, without reading the session: for tests and repairs,
it can leave a session that export and restore refuse.

Examples:
  printf '%s\n' '{"type":"session","version":3,"id":"s1","timestamp":"2026-09-25T22:28:55.554Z","cwd":"/work"}' \
    '{"type":"custom","id":"e1","parentId":null,"customType":"note"}' |
    transcript append --agent coder --session s1 --writer replica-7
`

// appendSummary is append's result.
type appendSummary struct {
	Session string `json:"session"`
	// Entries counts the lines read (header included).
	Entries int `json:"entries"`
	// Added counts those written (the session lacked them).
	Added   int    `json:"added"`
	Segment string `json:"segment,omitempty"`
	// Segments lists every segment written when the entries needed more than one.
	Segments []string `json:"segments,omitempty"`
}

func runAppend(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "append", appendUsage, true)
	writer := fs.String("writer", "", "writer id in the segment key (default: host name and random hex)")
	force := fs.Bool("force", false, "write every line as given, without reading the session or checking it (tests, repairs)")
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	ref, err := sf.ref("append")
	if err != nil {
		return err
	}
	w, err := newWriter(*writer)
	if err != nil {
		return err
	}
	entries, err := readEntryLines(env.stdin)
	if err != nil {
		return fmt.Errorf("append: stdin: %w", err)
	}
	if len(entries) == 0 {
		return fmt.Errorf("append: stdin holds no entries: %w", transcript.ErrEmptySegment)
	}
	s, err := sf.openStoreToWrite(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := writeSession(ctx, s, ref, entries, w, *force)
	if err != nil {
		return fmt.Errorf("append: %w", err)
	}
	sum := appendSummary{Session: ref.Norm().String(), Entries: len(entries), Added: res.fresh}
	sum.Segment, sum.Segments = res.keys()
	if sf.json {
		return writeJSON(env.stdout, sum)
	}
	if sum.Added == 0 {
		_, err = fmt.Fprintf(env.stdout, "%s\t%s\tunchanged (the session holds them all)\n", sum.Session, cmdcli.Count(sum.Entries, "entry"))
		return err
	}
	keys := sum.Segment
	if len(sum.Segments) > 1 {
		keys = strings.Join(sum.Segments, " ")
	}
	_, err = fmt.Fprintf(env.stdout, "%s\t%s\t%d added as %s\n", sum.Session, cmdcli.Count(sum.Entries, "entry"), sum.Added, keys)
	return err
}

// readEntryLines reads JSONL entries from r; blank lines are skipped, any other line
// must be a session header or a Pi entry.
func readEntryLines(r io.Reader) ([][]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), sessiontree.MaxLineBytes)
	var out [][]byte
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		raw := bytes.Clone(line)
		if _, err := pi.ParseHeader(raw); err != nil {
			if _, err := pi.ParseEntry(raw); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
		if _, err := transcript.ParseEntry(raw); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, raw)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		// The scanner stops at a line longer than its buffer, the store's limit.
		return nil, fmt.Errorf("line %d: %w", n+1, segment.CheckEntrySize(sessiontree.MaxLineBytes+1))
	}
	return out, sc.Err()
}
