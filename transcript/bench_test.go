package transcript_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// benchEntry is a realistic assistant message entry of roughly 700 bytes.
func benchEntry(i int, parent string) []byte {
	text := strings.Repeat("The parser trims whitespace before processing. ", 10)
	return []byte(fmt.Sprintf(`{"type":"message","id":"%08x","parentId":%q,"timestamp":"2026-09-25T22:29:%02d.000Z","message":{"role":"assistant","content":[{"type":"text","text":%q}],"api":"openai-completions","provider":"openai","model":"gpt-4o","usage":{"input":%d,"output":20},"stopReason":"stop","timestamp":1790375352000}}`,
		i, parent, i%60, text, i))
}

// benchBatch returns entries start to start+n-1 of a chain: entry 0 is its
// root. (Its parentId used to be "-0000001", an entry no session holds, so
// every whole read of a bench session also paid the relisting that heals a
// dangling parent.)
func benchBatch(start, n int) [][]byte {
	out := make([][]byte, n)
	for i := range n {
		parent := ""
		if start+i > 0 {
			parent = fmt.Sprintf("%08x", start+i-1)
		}
		out[i] = benchEntry(start+i, parent)
	}
	return out
}

// benchBackends returns the buckets the store benchmarks run against: memory always,
// MinIO when TRANSCRIPT_TEST_S3_ENDPOINT is set.
func benchBackends(b *testing.B) map[string]func(b *testing.B) bucket.Bucket {
	out := map[string]func(b *testing.B) bucket.Bucket{
		"mem": func(*testing.B) bucket.Bucket { return membucket.New() },
	}
	if s3 := s3BenchBucket(b); s3 != nil {
		out["minio"] = s3
	}
	return out
}

func BenchmarkStore_AppendSegment(b *testing.B) {
	ctx := context.Background()
	for name, newBucket := range benchBackends(b) {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/entries=%d", name, n), func(b *testing.B) {
				s, err := transcript.New(transcript.Config{Bucket: newBucket(b), Prefix: "bench"})
				require.NoError(b, err)
				defer s.Close()
				w := transcript.NewRandomWriter()
				batch := benchBatch(0, n)
				size := 0
				for _, e := range batch {
					size += len(e) + 1
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					_, err := s.AppendSegment(ctx, ref, batch, w)
					require.NoError(b, err)
				}
			})
		}
	}
}

func BenchmarkStore_ReadAll(b *testing.B) {
	ctx := context.Background()
	for name, newBucket := range benchBackends(b) {
		for _, c := range []struct{ segs, per int }{{10, 10}, {100, 10}, {1000, 10}, {1, 20000}} {
			segs, per := c.segs, c.per
			b.Run(fmt.Sprintf("%s/segments=%d/entries=%d", name, segs, per), func(b *testing.B) {
				s, err := transcript.New(transcript.Config{Bucket: newBucket(b), Prefix: "bench"})
				require.NoError(b, err)
				defer s.Close()
				w := transcript.NewRandomWriter()
				r := ref
				r.SessionID = fmt.Sprintf("read-%d-%s", segs, w.ID())
				size := 0
				for i := range segs {
					batch := benchBatch(i*per, per)
					for _, e := range batch {
						size += len(e) + 1
					}
					_, err := s.AppendSegment(ctx, r, batch, w)
					require.NoError(b, err)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					res, err := s.ReadAll(ctx, r)
					require.NoError(b, err)
					require.Len(b, res.Entries, segs*per)
				}
			})
		}
	}
}

// BenchmarkStore_ReadCompacted opens a session of 1,000 level-0 segments (10
// entries each) that compaction merged into one compacted segment.
func BenchmarkStore_ReadCompacted(b *testing.B) { benchReadCompacted(b, 1000, 10) }
