package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// testIncompleteGroup: a session compacted into a group of parts verifies clean;
// with one part gone, verify names the group and the missing part and exits 1.
func testIncompleteGroup(t *testing.T, b backend) {
	ctx := context.Background()
	store := b.fresh(t)
	bk, prefix := openBucket(t, store)
	s, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(t, err)
	defer s.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "g"}
	_, err = s.AppendSegment(ctx, ref, [][]byte{[]byte(headerLine("g"))}, w)
	require.NoError(t, err)
	parent := ""
	for i := range 12 {
		id := fmt.Sprintf("e%02d", i)
		_, err := s.AppendSegment(ctx, ref, [][]byte{[]byte(entryLine(id, parent))}, w)
		require.NoError(t, err)
		parent = id
	}
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce, TargetSegmentSize: 512})
	require.NoError(t, err)
	require.Len(t, res.Compactions, 1)
	parts := res.Compactions[0].Outputs
	require.Greater(t, len(parts), 2)

	r := cli(t, "verify", "--store", store)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)

	require.NoError(t, bk.Delete(ctx, parts[1].Key))
	r = cli(t, "verify", "--store", store)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "is incomplete: missing part(s) [1]")
	require.True(t, strings.Contains(r.stdout, parts[0].Key), "the report names a part that is there")
}
