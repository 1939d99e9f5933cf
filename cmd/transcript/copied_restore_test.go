package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// TestRestore_CopyLostSegment: a copy of a bucket that lacks a segment (an
// interrupted rclone, a lost object) holds a session whose entries name a
// parent no segment holds. Restore still writes what the copy holds, but it
// names the missing entries (under "leftOut" with --json) and exits 1, in
// either layout and on every run, as verify does: a restore from an incomplete
// copy never answers ok. A session the copy holds whole restores cleanly.
func TestRestore_CopyLostSegment(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "copy")
	store := "file://" + root
	b, prefix, err := bucketurl.Open(t.Context(), store)
	require.NoError(t, err)
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	defer s.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	// Each session is its header, then one entry per segment, a chain r, a, b, c.
	lostKey := ""
	for _, id := range []string{"whole", "torn"} {
		ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: id}
		for k, seg := range [][]string{{headerLine(id), messageLine("r", "", "root")}, {messageLine("a", "r", "one")},
			{messageLine("b", "a", "two")}, {messageLine("c", "b", "three")}} {
			batch := make([][]byte, len(seg))
			for i, l := range seg {
				batch[i] = []byte(l)
			}
			info, err := s.AppendSegment(t.Context(), ref, batch, w)
			require.NoError(t, err)
			if id == "torn" && k == 2 {
				lostKey = info.Key
			}
		}
	}
	// The copy lacks the segment holding "b" of session torn.
	require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(lostKey))))

	tests := []struct {
		name   string
		layout string
		file   string // the file written for torn, relative to --out
	}{
		{"sessiontree layout", layoutSessionTree, "default/agents/coder/sessions/torn.log.jsonl"},
		{"pi layout", layoutPi, "--work--/2026-09-25T22-28-55-554Z_torn.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+tt.layout)
			for run := 1; run <= 2; run++ { // the second run finds the files in place
				r := cli(t, "restore", "--store", store, "--out", out, "--layout", tt.layout, "--json")
				require.Equal(t, 1, r.code, "run %d: an incomplete session is no clean restore: %s %s", run, r.stdout, r.stderr)
				var sum restoreSummary
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout)
				require.Equal(t, 2, sum.Sessions, r.stdout)
				require.Zero(t, sum.Failed, r.stdout)
				require.Len(t, sum.LeftOut, 1, r.stdout)
				require.Equal(t, restoreLeftOut{Session: "default/coder/torn", File: filepath.Join(out, filepath.FromSlash(tt.file)),
					Entries: []string{"b"}, Reason: whyLost}, sum.LeftOut[0])
				require.Contains(t, r.stderr, "default/coder/torn: 1 entry left out of ")
				require.Contains(t, r.stderr, whyLost)
				data, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(tt.file)))
				require.NoError(t, err, "what the copy holds of the session is written")
				require.Contains(t, string(data), `"id":"c"`)
				require.NotContains(t, string(data), `"id":"b"`)
			}
			// Restoring only the whole session is clean.
			r := cli(t, "restore", "--store", store, "--out", out, "--layout", tt.layout, "--session", "whole", "--agent", "coder")
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			require.Empty(t, strings.TrimSpace(r.stderr))
		})
	}
}
