package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestVerify_CopyLostCompactedSegment: a copy of a bucket taken while a
// compaction's inputs waited for their delete delay, that lacks the compacted
// segment and one of its inputs (an interrupted rclone), has lost that input's
// entries. When nothing else names them (the last entry: no dangling parent),
// only the deletion mark, which names both, tells: verify reports the mark and
// the lost input and exits 1. A copy that lacks only one of the two lost
// nothing, and verify says so.
func TestVerify_CopyLostCompactedSegment(t *testing.T) {
	tests := []struct {
		name       string
		dropOutput bool
		dropInput  int // index of the input dropped, -1 for none
		lost       bool
	}{
		{"the whole copy", false, -1, false},
		{"the compacted segment missing", true, -1, false},
		{"an input missing", false, 3, false},
		{"the compacted segment and its last input missing", true, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, root, s, w := copyStore(t, t.TempDir())
			ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: "s1"}
			var inputs []string
			for _, seg := range [][]string{{headerLine("s1"), messageLine("r", "", "root")}, {messageLine("a", "r", "one")},
				{messageLine("b", "a", "two")}, {messageLine("c", "b", "three")}} {
				info, err := s.AppendSegment(t.Context(), ref, lineBatch(seg), w)
				require.NoError(t, err)
				inputs = append(inputs, info.Key)
			}
			res, err := s.Compact(t.Context(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: time.Hour})
			require.NoError(t, err)
			require.NotEmpty(t, res.Compactions, "one compaction, its inputs waiting for the delay")
			segs, err := s.ListSegments(t.Context(), ref)
			require.NoError(t, err)
			output := ""
			for _, sg := range segs {
				if sg.Level == 1 {
					output = sg.Key
				}
			}
			require.NotEmpty(t, output)

			if tt.dropOutput {
				require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(output))))
			}
			if tt.dropInput >= 0 {
				require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(inputs[tt.dropInput]))))
			}
			r := cli(t, "verify", "--store", store, "--json")
			var sum verifySummary
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout+r.stderr)
			if !tt.lost {
				require.Equal(t, 0, r.code, r.stdout+r.stderr)
				require.Empty(t, sum.Problems)
				return
			}
			require.Equal(t, 1, r.code, r.stdout+r.stderr)
			require.Len(t, sum.Problems, 1, r.stdout)
			require.Equal(t, "default/coder/s1", sum.Problems[0].Session)
			require.Contains(t, sum.Problems[0].Key, "default/coder/s1/gc/L1/")
			require.Contains(t, sum.Problems[0].Problem, segmentRel(inputs[tt.dropInput])+" are lost to every reader")
			require.Contains(t, sum.Problems[0].Problem, segmentRel(output))
		})
	}
}

// TestVerify_CopyLostTail: a copy of a bucket that lacks the last segments of
// a session (an interrupted rclone copies in key order) holds no trace of them
// in the segments: no parent dangles. The summary object a list (the server's)
// cached beside the session still names its active leaf and counts its
// entries: verify reports a leaf no segment holds, or more entries than the
// segments hold, and exits 1. A stale summary (older than the last appends)
// is no problem.
func TestVerify_CopyLostTail(t *testing.T) {
	tests := []struct {
		name    string
		summary transcript.CachedSummary
		drop    bool // drop the session's last segment
		problem string
	}{
		{"whole copy", transcript.CachedSummary{Leaf: "c", Summary: transcript.Summary{Entries: 4}}, false, ""},
		{"stale summary", transcript.CachedSummary{Leaf: "a", Summary: transcript.Summary{Entries: 2}}, false, ""},
		{"tail lost", transcript.CachedSummary{Leaf: "c", Summary: transcript.Summary{Entries: 4}}, true,
			"names its active leaf c, which no segment holds"},
		{"tail lost, leaf unknown", transcript.CachedSummary{Summary: transcript.Summary{Entries: 4}}, true,
			"counted 4 entries, its segments hold 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, root, s, w := copyStore(t, t.TempDir())
			ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: "s1"}
			var last string
			for _, seg := range [][]string{{headerLine("s1"), messageLine("r", "", "root")}, {messageLine("a", "r", "one")},
				{messageLine("b", "a", "two")}, {messageLine("c", "b", "three")}} {
				info, err := s.AppendSegment(t.Context(), ref, lineBatch(seg), w)
				require.NoError(t, err)
				last = info.Key
			}
			cs := tt.summary
			cs.Tag = "derived-from-an-older-listing"
			require.NoError(t, s.WriteSummary(t.Context(), ref, cs))
			if tt.drop {
				require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(last))))
			}
			r := cli(t, "verify", "--store", store, "--json")
			var sum verifySummary
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout+r.stderr)
			if tt.problem == "" {
				require.Equal(t, 0, r.code, r.stdout+r.stderr)
				require.Empty(t, sum.Problems)
				return
			}
			require.Equal(t, 1, r.code, r.stdout+r.stderr)
			require.Len(t, sum.Problems, 1, r.stdout)
			require.Equal(t, "default/coder/s1/"+transcript.SummaryName, sum.Problems[0].Key)
			require.Contains(t, sum.Problems[0].Problem, tt.problem)
		})
	}
}
