package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// batchCapture is an uploader that keeps the batches a flush hands over.
type batchCapture struct{ entries [][]byte }

// Upload implements sessiontree.Uploader.
func (c *batchCapture) Upload(_ context.Context, b sessiontree.Batch) error {
	c.entries = append(c.entries, b.Entries...)
	return nil
}

// PendingEntries implements sessiontree.Uploader: nothing is held back.
func (c *batchCapture) PendingEntries(context.Context, transcript.TranscriptRef) ([][]byte, error) {
	return nil, nil
}

// ReadsLocalFiles implements sessiontree.Uploader: the entries are the batch's.
func (c *batchCapture) ReadsLocalFiles() bool { return false }

// TestImportLines_AsAFirstFlush checks that import uploads exactly what the first
// Flush of the imported SessionTree hands its uploader (which import used to
// capture by flushing a scratch tree), for Pi files of every version, with a
// branch, a compaction, a leaf move and an entry repeated with the same bytes.
func TestImportLines_AsAFirstFlush(t *testing.T) {
	files := map[string]string{}
	for _, name := range []string{"pi-v1-prompt-cache-replay.jsonl", "pi-v3-browse-session.jsonl", "branched.context-file.jsonl"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "sessiontree", "testdata", name))
		require.NoError(t, err)
		files[name] = string(data)
	}
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line(`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}`)
	line(`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"yo"}],"provider":"p","model":"m","timestamp":2}}`)
	line(`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}`)
	line(`{"type":"compaction","id":"c1","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z","summary":"s","firstKeptEntryId":"a2","tokensBefore":10}`)
	line(`{"type":"message","id":"b1","parentId":"a1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"other","timestamp":4}}`)
	line(`{"type":"leaf","id":"l1","parentId":"b1","timestamp":"2026-01-01T00:00:05.000Z","targetId":"c1"}`)
	files["built"] = b.String()

	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "s"}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))

			capture := &batchCapture{}
			tree, _, err := sessiontree.Import(sessiontree.Config{Root: t.TempDir(), Uploader: capture, NoSync: true},
				sessiontree.Identity{Namespace: ref.Namespace}, ref.AgentID, ref.SessionID, strings.NewReader(content))
			require.NoError(t, err)
			require.NoError(t, tree.Flush(t.Context()))
			require.NotEmpty(t, capture.entries)

			var stderr bytes.Buffer
			got, skipped, err := importLines(t.Context(), &cliEnv{stderr: &stderr, getenv: os.Getenv}, ref, path, false)
			require.NoError(t, err, stderr.String())
			require.Zero(t, skipped)
			require.Equal(t, capture.entries, got)
		})
	}
}
