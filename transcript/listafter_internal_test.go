package transcript

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestStore_ListSegmentsAfter(t *testing.T) {
	ctx := t.Context()
	s, err := New(Config{Bucket: membucket.New()})
	require.NoError(t, err)
	defer s.Close()
	ref := TranscriptRef{Namespace: DefaultNamespace, AgentID: "a", SessionID: "s"}
	w, err := NewWriter("w")
	require.NoError(t, err)
	var keys []string
	for _, id := range []string{"a", "b", "c"} {
		info, err := s.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"m","id":"` + id + `"}`)}, w)
		require.NoError(t, err)
		keys = append(keys, info.Key)
	}
	require.True(t, sort.StringsAreSorted(keys), "keys sort in write order")
	after, err := s.listSegmentsAfter(ctx, ref, keys[0])
	require.NoError(t, err)
	require.Len(t, after, 2)
	require.Equal(t, keys[1], after[0].Key)
}
