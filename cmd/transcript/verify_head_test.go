package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestVerify_StrictHead: verify reads a strict session's head. A head that
// does not parse, or that commits a segment which is gone, is a problem (the
// server serves such a session short and refuses its appends); a compaction,
// which replaces the committed segments and then the head, is not.
func TestVerify_StrictHead(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string, s *transcript.Store, ref transcript.TranscriptRef, last transcript.SegmentInfo)
		code    int
		problem string
	}{
		{"intact", func(*testing.T, string, *transcript.Store, transcript.TranscriptRef, transcript.SegmentInfo) {}, 0, ""},
		{"compacted", func(t *testing.T, _ string, s *transcript.Store, ref transcript.TranscriptRef, _ transcript.SegmentInfo) {
			_, err := s.Compact(t.Context(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
		}, 0, ""},
		{"head garbage", func(t *testing.T, dir string, s *transcript.Store, ref transcript.TranscriptRef, _ transcript.SegmentInfo) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, s.SessionPrefix(ref), transcript.HeadName), []byte("{garbage"), 0o644))
		}, 1, "HEAD.json: the strict session's head does not parse"},
		{"committed segment lost", func(t *testing.T, dir string, _ *transcript.Store, _ transcript.TranscriptRef, last transcript.SegmentInfo) {
			require.NoError(t, os.Remove(filepath.Join(dir, last.Key)))
		}, 1, "HEAD.json: the head commits segment L0/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s := fileStore(t, dir)
			ref := transcript.TranscriptRef{AgentID: "a", SessionID: "st"}
			w, err := transcript.NewWriter("server")
			require.NoError(t, err)
			_, head, err := s.CreateSession(t.Context(), ref, [][]byte{[]byte(headerLine("st"))}, w, transcript.CreateOptions{Strict: true})
			require.NoError(t, err)
			var last transcript.SegmentInfo
			parent := ""
			for _, id := range []string{"e1", "e2", "e3"} {
				last, head, err = s.CommitSegment(t.Context(), ref, head, [][]byte{[]byte(entryLine(id, parent))}, w, id, nil)
				require.NoError(t, err)
				parent = id
			}
			tt.damage(t, dir, s, ref, last)

			r := cli(t, "verify", "--store", "file://"+dir)
			require.Equal(t, tt.code, r.code, r.stdout+r.stderr)
			if tt.problem == "" {
				require.Contains(t, r.stdout, "0 problems")
				return
			}
			require.Contains(t, r.stdout, tt.problem)
			require.Contains(t, r.stdout, "1 problem in ")
			require.False(t, strings.Contains(r.stdout, "no session header"), r.stdout)
		})
	}
}
