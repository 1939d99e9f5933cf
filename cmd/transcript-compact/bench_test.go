package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
)

// benchSize reads a size from the environment (for a smaller or larger run).
func benchSize(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchEntry is an entry of about 1 KiB shaped like an assistant turn.
func benchEntry(id, parent string) []byte {
	p := "null"
	if parent != "" {
		p = strconv.Quote(parent)
	}
	text := strings.Repeat("The test suite passes after the fix to the merge order. ", 16)
	return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-29T10:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":%q}],"usage":{"input":1200,"output":340}}}`, id, p, text))
}

// openLatency returns the median time to ReadAll the sample of sessions.
func openLatency(b *testing.B, s *transcript.Store, refs []transcript.TranscriptRef) time.Duration {
	b.Helper()
	var ds []time.Duration
	for _, ref := range refs {
		start := time.Now()
		_, err := s.ReadAll(context.Background(), ref)
		require.NoError(b, err)
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// BenchmarkJob_MinIO compacts TRANSCRIPT_BENCH_SESSIONS sessions (default 2,000) of
// TRANSCRIPT_BENCH_SEGMENTS one-entry segments (default 20) on MinIO, reporting
// sessions/s, input MB/s and the median open latency before and after. Run it with
//
//	eval "$(bash deploy/minio/minio.sh env)"
//	go test ./cmd/transcript-compact -run '^$' -bench Job_MinIO -benchtime 1x -timeout 30m
func BenchmarkJob_MinIO(b *testing.B) {
	endpoint := os.Getenv("TRANSCRIPT_TEST_S3_ENDPOINT")
	if endpoint == "" {
		b.Skip("TRANSCRIPT_TEST_S3_ENDPOINT not set")
	}
	sessions := benchSize("TRANSCRIPT_BENCH_SESSIONS", 2000)
	segments := benchSize("TRANSCRIPT_BENCH_SEGMENTS", 20)
	ctx := context.Background()
	for i := range b.N {
		b.StopTimer()
		url := fmt.Sprintf("s3://compact-bench-%d-%d/bench?endpoint=%s&insecure=true&create=true", os.Getpid(), i, endpoint)
		s := openStore(b, url)
		refs := make([]transcript.TranscriptRef, sessions)
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(32)
		for k := range refs {
			refs[k] = transcript.TranscriptRef{Namespace: "bench", AgentID: fmt.Sprintf("agent-%d", k%10), SessionID: fmt.Sprintf("s%05d", k)}
			g.Go(func() error {
				w, err := transcript.NewWriter("replica")
				if err != nil {
					return err
				}
				parent := ""
				for n := range segments {
					id := fmt.Sprintf("e%d", n)
					if _, err := s.AppendSegment(gctx, refs[k], [][]byte{benchEntry(id, parent)}, w); err != nil {
						return err
					}
					parent = id
				}
				return nil
			})
		}
		require.NoError(b, g.Wait())
		sample := refs[:min(len(refs), 50)]
		before := openLatency(b, s, sample)

		j := &job{store: s, shards: 1, parallel: 16, out: io.Discard, errOut: io.Discard,
			progress: noProgress{}, opts: transcript.CompactOptions{MinSegments: 4, DeleteDelay: transcript.DeleteAtOnce}}
		b.StartTimer()
		sum, err := j.run(ctx)
		b.StopTimer()
		require.NoError(b, err)
		require.Equal(b, sessions, sum.SessionsCompacted)
		after := openLatency(b, s, sample)
		b.ReportMetric(sum.SessionsPerSecond, "sessions/s")
		b.ReportMetric(sum.InputMBPerSecond, "MB/s")
		b.ReportMetric(float64(before.Microseconds())/1000, "open-before-ms")
		b.ReportMetric(float64(after.Microseconds())/1000, "open-after-ms")
		b.ReportMetric(float64(sum.BytesIn)/float64(max(1, sum.BytesOut)), "bytes-in/out")
		b.StartTimer()
	}
}
