package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestStats_CopyTruncatedSegment: in a copy of a bucket one segment is
// truncated (a copy tool cut off mid-object). stats counts the rest and names
// that segment as unreadable (in --json too) and exits 1, instead of failing
// whole on it with no count at all, or counting it silently.
func TestStats_CopyTruncatedSegment(t *testing.T) {
	store, root, s, w := copyStore(t, t.TempDir())
	var keys []string
	for _, id := range []string{"s1", "s2"} {
		ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: id}
		for _, seg := range [][]string{{headerLine(id), messageLine("r", "", "root")}, {messageLine("a", "r", "one")}} {
			info, err := s.AppendSegment(t.Context(), ref, lineBatch(seg), w)
			require.NoError(t, err)
			keys = append(keys, info.Key)
		}
	}
	whole := cli(t, "stats", "--store", store, "--json")
	require.Equal(t, 0, whole.code, whole.stdout+whole.stderr)
	var before storeStats
	require.NoError(t, json.Unmarshal([]byte(whole.stdout), &before))
	require.Equal(t, 4, before.Segments)
	require.Empty(t, before.Unreadable)

	torn := keys[3] // s2's second segment
	require.NoError(t, os.Truncate(filepath.Join(root, filepath.FromSlash(torn)), 40))

	r := cli(t, "stats", "--store", store, "--json")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	var st storeStats
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st), r.stdout)
	require.Equal(t, []string{torn}, st.Unreadable)
	require.Equal(t, 2, st.Sessions)
	require.Equal(t, 3, st.Segments, "the readable segments are counted")

	r = cli(t, "stats", "--store", store)
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "1 segment, counted nowhere else (run transcript verify): "+torn)
}
