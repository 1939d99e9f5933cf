package transcript_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A View's hidden segment is missing for every read (ReadSegment,
// ReadSegmentMeta, the listing, ReadAll, ReadLean, ReadNew); a kept one is there,
// and a view hiding every segment does not find the session.
func TestStore_View(t *testing.T) {
	ctx := t.Context()
	s, err := transcript.New(transcript.Config{Bucket: membucket.New(), Prefix: "p"})
	require.NoError(t, err)
	w, err := transcript.NewWriter("w")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "s"}
	hidden, err := s.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"e1","parentId":null}`)}, w)
	require.NoError(t, err)
	kept, err := s.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"e2","parentId":"e1"}`)}, w)
	require.NoError(t, err)
	v := s.View(func(info transcript.SegmentInfo) bool { return info.Key != hidden.Key })

	reads := []struct {
		name string
		read func(key string) error
	}{
		{"ReadSegment", func(key string) error { _, err := v.ReadSegment(ctx, key); return err }},
		{"ReadSegmentMeta", func(key string) error { _, err := v.ReadSegmentMeta(ctx, key); return err }},
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			require.ErrorIs(t, r.read(hidden.Key), bucket.ErrNotFound)
			require.NoError(t, r.read(kept.Key))
		})
	}
	infos, err := v.ListSegments(ctx, ref)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	require.Equal(t, kept.Key, infos[0].Key)
	res, err := v.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"e2"}, ids(res))
	lean, err := v.ReadLean(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, 1, lean.Len())
	inc, err := v.ReadNew(ctx, ref, transcript.SegmentSet{})
	require.NoError(t, err)
	require.Equal(t, []string{"e2"}, ids(inc.MergeResult))

	all, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, all.Entries, 2, "the store itself is not filtered")
	none := v.View(func(info transcript.SegmentInfo) bool { return info.Key != kept.Key })
	_, err = none.ReadAll(ctx, ref)
	require.ErrorIs(t, err, bucket.ErrNotFound, "a view of a view keeps what both keep")
}
