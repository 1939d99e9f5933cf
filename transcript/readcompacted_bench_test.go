package transcript_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// BenchmarkStore_ReadAll_Compacted reads a session of 3,000 entries (about 2 MB of
// JSONL) compacted into one segment, from memory: what ReadAll costs beyond moving
// the bytes (decode, verify, merge).
func BenchmarkStore_ReadAll_Compacted(b *testing.B) {
	ctx := context.Background()
	s, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(b, err)
	defer s.Close()
	w := transcript.NewRandomWriter()
	const segs, per = 30, 100
	size := 0
	for i := range segs {
		batch := benchBatch(i*per, per)
		for _, e := range batch {
			size += len(e) + 1
		}
		_, err := s.AppendSegment(ctx, ref, batch, w)
		require.NoError(b, err)
	}
	_, err = s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(b, err)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.ReadAll(ctx, ref)
		require.NoError(b, err)
		require.Len(b, res.Entries, segs*per)
	}
}
