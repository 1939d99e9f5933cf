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
// names the missing entries (under "leftOut" with --json, and on stderr) in
// either layout and on every run: a restore from an incomplete copy never
// answers silently. It is a warning (exit 0), as Pi writes such sessions too
// (0.58's createBranchedSession); verify counts it as a problem. A session the
// copy holds whole restores without one.
func TestRestore_CopyLostSegment(t *testing.T) {
	dir := t.TempDir()
	store, root, s, w := copyStore(t, dir)
	// Each session is its header, then one entry per segment, a chain r, a, b, c.
	lostKey := ""
	for _, id := range []string{"whole", "torn"} {
		ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: id}
		for k, seg := range [][]string{{headerLine(id), messageLine("r", "", "root")}, {messageLine("a", "r", "one")},
			{messageLine("b", "a", "two")}, {messageLine("c", "b", "three")}} {
			info, err := s.AppendSegment(t.Context(), ref, lineBatch(seg), w)
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
				// A warning, not a failure: Pi writes such sessions too.
				require.Equal(t, 0, r.code, "run %d: %s %s", run, r.stdout, r.stderr)
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

// TestRestore_CopyLostHeldSegment: files restored from a whole copy of a
// bucket, then restored again (to catch up) from a copy that lacks one of the
// segments they hold (the last one, whose entry no other names), are not
// called identical to it: the run compares them with the session read whole
// and fails the session, naming the entry the store lacks, on every run, as a
// first run into those files does. Segments gone because a compaction merged
// them and deleted them keep the catch-up incremental and clean.
func TestRestore_CopyLostHeldSegment(t *testing.T) {
	tests := []struct {
		name string
		// damage changes the copy after the first restore, given the store and
		// the keys of the session's segments in the order written.
		damage func(t *testing.T, s *transcript.Store, ref transcript.TranscriptRef, root string, keys []string)
		lost   bool
	}{
		{"the last segment lost", func(t *testing.T, _ *transcript.Store, _ transcript.TranscriptRef, root string, keys []string) {
			require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(keys[len(keys)-1]))))
		}, true},
		{"compacted, its inputs deleted", func(t *testing.T, s *transcript.Store, ref transcript.TranscriptRef, _ string, _ []string) {
			_, err := s.Compact(t.Context(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			store, root, s, w := copyStore(t, dir)
			ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: "s1"}
			var keys []string
			for _, seg := range [][]string{{headerLine("s1"), messageLine("r", "", "root")}, {messageLine("a", "r", "one")},
				{messageLine("b", "a", "two")}} {
				info, err := s.AppendSegment(t.Context(), ref, lineBatch(seg), w)
				require.NoError(t, err)
				keys = append(keys, info.Key)
			}
			out := filepath.Join(dir, "out")
			r := cli(t, "restore", "--store", store, "--out", out)
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			tt.damage(t, s, ref, root, keys)
			for run := 1; run <= 2; run++ {
				r = cli(t, "restore", "--store", store, "--out", out, "--json")
				var sum restoreSummary
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout+r.stderr)
				if !tt.lost {
					require.Equal(t, 0, r.code, r.stdout+r.stderr)
					require.Equal(t, 1, sum.Skipped, r.stdout)
					continue
				}
				require.Equal(t, 1, r.code, "run %d: %s %s", run, r.stdout, r.stderr)
				require.Equal(t, 1, sum.Failed, r.stdout)
				require.Contains(t, sum.Failures[0].Error, `entry b: `+errLocalOnly.Error())
			}
		})
	}
}

// TestLostParents: the entries named as a parent that no entry (the header
// included) holds, each once, in the order first named.
func TestLostParents(t *testing.T) {
	tests := []struct {
		name  string
		pairs [][2]string // id, parentId
		want  []string
	}{
		{"whole", [][2]string{{"h", ""}, {"a", ""}, {"b", "a"}}, nil},
		{"the header as a parent", [][2]string{{"h", ""}, {"a", "h"}}, nil},
		{"self-parent", [][2]string{{"h", ""}, {"a", "a"}}, nil},
		{"lost, named twice", [][2]string{{"h", ""}, {"c", "b"}, {"d", "x"}, {"e", "b"}}, []string{"b", "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lostParents(len(tt.pairs), func(i int) (string, string) { return tt.pairs[i][0], tt.pairs[i][1] })
			require.Equal(t, tt.want, got)
		})
	}
}

// TestLostParentsOfFile: an entry whose parent is the session header (as some
// writers store the first entry) names no lost entry.
func TestLostParentsOfFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(headerLine("h1")+"\n"+messageLine("a", "h1", "one")+"\n"+messageLine("c", "b", "two")+"\n"), 0o644))
	lost, err := lostParentsOfFile(path)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, lost)
}

// copyStore makes a directory store under dir, read as a copy of a bucket
// is (rclone copy of the bucket into a directory): its URL and root, the
// store (closed with the test) and a writer of its segments.
func copyStore(t *testing.T, dir string) (store, root string, s *transcript.Store, w *transcript.Writer) {
	t.Helper()
	root = filepath.Join(dir, "copy")
	store = "file://" + root
	b, prefix, err := bucketurl.Open(t.Context(), store)
	require.NoError(t, err)
	s, err = transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	w, err = transcript.NewWriter("replica")
	require.NoError(t, err)
	return store, root, s, w
}

// lineBatch is lines as the entries of one segment.
func lineBatch(lines []string) [][]byte {
	batch := make([][]byte, len(lines))
	for i, l := range lines {
		batch[i] = []byte(l)
	}
	return batch
}
