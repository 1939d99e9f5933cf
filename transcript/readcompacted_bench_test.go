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
func BenchmarkStore_ReadAll_Compacted(b *testing.B) { benchReadCompacted(b, 30, 100) }

// benchReadCompacted appends segs segments of per entries each to one session,
// compacts them into one segment (deleting the inputs), and measures ReadAll of it.
func benchReadCompacted(b *testing.B, segs, per int) {
	ctx := context.Background()
	s, err := transcript.New(transcript.Config{Bucket: membucket.New(), Prefix: "bench"})
	require.NoError(b, err)
	defer s.Close()
	w := transcript.NewRandomWriter()
	r := ref
	r.SessionID = "compacted-" + w.ID()
	size := 0
	for i := range segs {
		batch := benchBatch(i*per, per)
		for _, e := range batch {
			size += len(e) + 1
		}
		_, err := s.AppendSegment(ctx, r, batch, w)
		require.NoError(b, err)
	}
	_, err = s.Compact(ctx, r, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(b, err)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := s.ReadAll(ctx, r)
		require.NoError(b, err)
		require.Len(b, res.Entries, segs*per)
		require.Len(b, res.Segments, 1)
	}
}
