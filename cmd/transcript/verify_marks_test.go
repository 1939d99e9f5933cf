package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestVerify_IgnoredDeletionMarks: a deletion mark whose content is not a mark,
// or that names another segment than its key stands for, is ignored by the
// compaction job, never trusted and never removed: verify names it, so that an
// operator can. The mark a compaction stores while its inputs wait for the
// delete delay is no problem.
func TestVerify_IgnoredDeletionMarks(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, mark string) // mark: the path of the compaction's mark
		problem string                          // the key named, relative to the mark's folder; "" for none
	}{
		{"the compaction's own mark", func(*testing.T, string) {}, ""},
		{"not a mark", func(t *testing.T, mark string) {
			require.NoError(t, os.WriteFile(mark, []byte("{garbage"), 0o644))
		}, "self"},
		{"empty object", func(t *testing.T, mark string) {
			require.NoError(t, os.WriteFile(mark, []byte("{}"), 0o644))
		}, "self"},
		{"a copy under another name", func(t *testing.T, mark string) {
			data, err := os.ReadFile(mark)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(mark), "other.mark.json"), data, 0o644))
		}, "other.mark.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s := fileStore(t, dir)
			ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
			w, err := transcript.NewWriter("w")
			require.NoError(t, err)
			lines := []string{headerLine("s"), entryLine("e1", ""), entryLine("e2", "e1"), entryLine("e3", "e2")}
			for _, l := range lines {
				_, err := s.AppendSegment(t.Context(), ref, [][]byte{[]byte(l)}, w)
				require.NoError(t, err)
			}
			res, err := s.Compact(t.Context(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DefaultDeleteDelay})
			require.NoError(t, err)
			require.Equal(t, 4, res.Marked, "the inputs wait for the delete delay, under a mark")
			marks, err := filepath.Glob(filepath.Join(dir, s.SessionPrefix(ref), "gc", "L1", "*.mark.json"))
			require.NoError(t, err)
			require.Len(t, marks, 1)
			tt.damage(t, marks[0])

			r := cli(t, "verify", "--store", "file://"+dir)
			if tt.problem == "" {
				require.Equal(t, 0, r.code, r.stdout+r.stderr)
				require.Contains(t, r.stdout, "0 problems")
				return
			}
			require.Equal(t, 1, r.code, r.stdout+r.stderr)
			key := filepath.Base(marks[0])
			if tt.problem != "self" {
				key = tt.problem
			}
			require.Contains(t, r.stdout, "gc/L1/"+key+": a deletion mark that is not one")
			require.Equal(t, 1, strings.Count(r.stdout, "a deletion mark that is not one"), r.stdout)
			require.Contains(t, r.stdout, "1 problem in ")
		})
	}
}
