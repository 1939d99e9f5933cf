package transcript_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// BenchmarkReadLean_Payloads reads a session of 32 images of 1 MiB whole
// (ReadLean, then its JSONL written out, as restore does), stored with the
// payloads outside the segments and inline: run with -memprofile to see what a
// read that puts payloads back allocates beyond the entries it returns.
func BenchmarkReadLean_Payloads(b *testing.B) {
	for _, m := range []struct {
		name      string
		threshold int
	}{{"outside", 0}, {"inline", -1}} {
		b.Run(m.name, func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b, membucket.New(), transcript.Config{PayloadThreshold: m.threshold})
			w := newWriter(b, "w1")
			parent := ""
			var size int64
			for i := range 32 {
				id := string(rune('a'+i%26)) + string(rune('a'+i/26))
				e := imageEntry(id, parent, imageData(uint64(i), 1<<20))
				size += int64(len(e)) + 1
				_, err := s.AppendSegment(ctx, ref, [][]byte{e}, w)
				require.NoError(b, err)
				parent = id
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.ReadLean(ctx, ref)
				require.NoError(b, err)
				require.NoError(b, res.WriteJSONL(io.Discard))
			}
		})
	}
}
