package repository_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
)

// BenchmarkAppend measures one append of one message entry against MinIO, in
// default mode (list the session, put a segment) and in strict mode (get the
// head, put a segment, put the head with If-Match). Sessions rotate every
// appendsPerSession appends so that listing cost stays that of a normal session.
// Without MinIO it is skipped (and fails under CI=true).
func BenchmarkAppend(b *testing.B) {
	const appendsPerSession = 64
	for _, mode := range []struct {
		name   string
		strict bool
	}{{"Default", false}, {"Strict", true}} {
		b.Run(mode.name, func(b *testing.B) {
			e := newEnv(b, newMinioBucket(b))
			r := e.repo(alice)
			ctx := b.Context()
			var s *repository.Session
			parent := ""
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%appendsPerSession == 0 {
					b.StopTimer()
					var err error
					s, err = r.Create(ctx, repository.CreateOptions{ID: fmt.Sprintf("bench-%d", i), Strict: mode.strict})
					require.NoError(b, err)
					parent = ""
					b.StartTimer()
				}
				id := fmt.Sprintf("e%d", i)
				if err := s.Append(ctx, msg(id, parent, "benchmark turn")); err != nil {
					b.Fatal(err)
				}
				parent = id
			}
		})
	}
}

// BenchmarkAppendStrictCompacted measures whether strict appends stay as fast as
// a session grows while the compaction job keeps compacting it: each iteration
// appends 10,000 entries to a new strict session on MinIO while Store.Compact
// runs on it every 200ms, and reports the mean latency of the first and the last
// 1,000 appends (first-ms/append, last-ms/append), their ratio (last/first) and
// the largest head object seen (max-head-bytes). Run it once:
//
//	go test ./repository -run '^$' -bench AppendStrictCompacted -benchtime 1x
func BenchmarkAppendStrictCompacted(b *testing.B) {
	const appends, window = 10000, 1000
	e := newEnv(b, newMinioBucket(b))
	r := e.repo(alice)
	ctx := b.Context()
	for i := 0; b.Loop(); i++ {
		s, err := r.Create(ctx, repository.CreateOptions{ID: fmt.Sprintf("long-%d", i), Strict: true})
		require.NoError(b, err)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				_, err := e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{MinSegments: 8, DeleteDelay: transcript.DeleteAtOnce})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		lat := make([]time.Duration, appends)
		maxHead := 0
		parent := ""
		for k := range appends {
			id := fmt.Sprintf("e%05d", k)
			start := time.Now()
			if err := s.Append(ctx, msg(id, parent, "benchmark turn")); err != nil {
				b.Fatal(err)
			}
			lat[k] = time.Since(start)
			parent = id
			if k%100 == 0 {
				data, _, err := e.bucket.GetWithETag(ctx, sessionPrefix(s)+transcript.HeadName)
				require.NoError(b, err)
				maxHead = max(maxHead, len(data))
			}
		}
		close(stop)
		wg.Wait()
		mean := func(d []time.Duration) float64 {
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			return float64(sum.Microseconds()) / 1000 / float64(len(d))
		}
		first, last := mean(lat[:window]), mean(lat[appends-window:])
		b.ReportMetric(first, "first-ms/append")
		b.ReportMetric(last, "last-ms/append")
		b.ReportMetric(last/first, "last/first")
		b.ReportMetric(float64(maxHead), "max-head-bytes")
	}
}
