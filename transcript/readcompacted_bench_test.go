package transcript_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
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
	bkt := membucket.New()
	s, err := transcript.New(transcript.Config{Bucket: bkt, Prefix: "bench"})
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
	res, err := s.ReadAll(ctx, r)
	require.NoError(b, err)
	require.Len(b, res.Segments, 1)
	key := res.Segments[0].Key
	b.Run("store", func(b *testing.B) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			res, err := s.ReadAll(ctx, r)
			require.NoError(b, err)
			require.Len(b, res.Entries, segs*per)
			require.Len(b, res.Segments, 1)
		}
	})
	// The plain reader of the bench's item 4: the GET of the compacted segment,
	// then zstd DecodeAll into a buffer of its size; no verification, no merge.
	b.Run("plain", func(b *testing.B) {
		dec, err := zstd.NewReader(nil)
		require.NoError(b, err)
		defer dec.Close()
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			rc, _, err := bkt.Get(ctx, key)
			require.NoError(b, err)
			body, err := io.ReadAll(rc)
			rc.Close()
			require.NoError(b, err)
			out, err := dec.DecodeAll(body, make([]byte, 0, size+4096))
			require.NoError(b, err)
			require.GreaterOrEqual(b, len(out), size)
		}
	})
}

// BenchmarkStore_OpenCompacted_RoundTrips opens the session of
// BenchmarkStore_ReadAll_Compacted from a memory bucket whose every LIST and GET
// first waits 2 ms (a round trip to an object store): cold (ReadAll: the LIST,
// then the GET) and warm (ReadAllKnown with the segments of an earlier open: the
// GET starts with the LIST). The difference is one round trip; the rest is the
// same decode and merge.
func BenchmarkStore_OpenCompacted_RoundTrips(b *testing.B) {
	ctx := context.Background()
	fb := faultbucket.Wrap(membucket.New())
	s, err := transcript.New(transcript.Config{Bucket: fb, Prefix: "bench"})
	require.NoError(b, err)
	defer s.Close()
	w := transcript.NewRandomWriter()
	r := ref
	r.SessionID = "round-trips-" + w.ID()
	for i := range 30 {
		_, err := s.AppendSegment(ctx, r, benchBatch(i*100, 100), w)
		require.NoError(b, err)
	}
	_, err = s.Compact(ctx, r, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(b, err)
	first, err := s.ReadAll(ctx, r)
	require.NoError(b, err)
	fb.SetDelay(faultbucket.OpGet|faultbucket.OpList, 2*time.Millisecond)
	for _, c := range []struct {
		name string
		open func() (*transcript.MergeResult, error)
	}{
		{"cold", func() (*transcript.MergeResult, error) { return s.ReadAll(ctx, r) }},
		{"warm", func() (*transcript.MergeResult, error) { return s.ReadAllKnown(ctx, r, first.Segments) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			fb.ResetCounts()
			n := 0
			for b.Loop() {
				res, err := c.open()
				require.NoError(b, err)
				require.Len(b, res.Entries, 3000)
				n++
			}
			got := fb.Counts()
			b.ReportMetric(float64(got.Get+got.List)/float64(n), "requests/op")
		})
	}
}
