package transcript_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// BenchmarkAppendSegment_Image appends one segment per op holding a new image of
// 1 MiB and a short reply, as item 18 of transcript-bench writes its session:
// with the payload outside the segment and inline, through AppendSegment and
// AppendSegments (item 18's call). Over membucket, and MinIO when
// TRANSCRIPT_TEST_S3_ENDPOINT is set; on MinIO the payload's looks (mark and
// object) and PUT come before the segment PUT, in round trips.
func BenchmarkAppendSegment_Image(b *testing.B) {
	for name, newBucket := range benchBackends(b) {
		for _, m := range []struct {
			name      string
			threshold int
		}{{"outside", 0}, {"inline", -1}} {
			for _, api := range []string{"one", "batch"} {
				b.Run(name+"/"+m.name+"/"+api, func(b *testing.B) {
					ctx := context.Background()
					s := newStore(b, newBucket(b), transcript.Config{PayloadThreshold: m.threshold})
					w := newWriter(b, "w1")
					parent := ""
					i := 0
					b.SetBytes(1 << 20)
					for b.Loop() {
						u, a := fmt.Sprintf("u%06d", i), fmt.Sprintf("a%06d", i)
						batch := [][]byte{imageEntry(u, parent, imageData(uint64(i), 1<<20)), entry(a, u)}
						var err error
						if api == "one" {
							_, err = s.AppendSegment(ctx, ref, batch, w)
						} else {
							_, err = s.AppendSegments(ctx, ref, batch, w)
						}
						require.NoError(b, err)
						parent = a
						i++
					}
				})
			}
		}
	}
}
