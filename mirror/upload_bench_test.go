package mirror_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// BenchmarkMirror_Upload measures the flush path of the segment Mirror alone:
// Upload of one realistic turn (encode, journal append, the shared sync of the
// outbox journal on the local disk) from 1, 4 and 32 goroutines at once, each
// flushing a session of its own, over an in-memory store (the uploads behind it
// cost next to nothing). ns/op is the time per flush of all flushers together
// (32 goroutines: flushers/GOMAXPROCS per P, 32 on two cores); fsyncs/flush how
// many flushes an fsync of the journal covered.
func BenchmarkMirror_Upload(b *testing.B) {
	turns := newBenchSession(64)
	for _, flushers := range []int{1, 4, 32} {
		b.Run(fmt.Sprintf("flushers=%d", flushers), func(b *testing.B) {
			store := newStore(b, membucket.New(), "bench")
			m := newMirror(b, store, "", func(c *mirror.Config) { c.BlockWhenFull = true })
			flush := func(id int64, t int) error {
				// Each session holds len(turns) turns; then the flusher starts another.
				ref := transcript.TranscriptRef{AgentID: "bench", SessionID: fmt.Sprintf("s%03d-%d", id, t/len(turns))}
				return m.Upload(b.Context(), sessiontree.Batch{Ref: ref, Entries: turns[t%len(turns)]})
			}
			b.ReportAllocs()
			if flushers == 1 {
				for t := 0; b.Loop(); t++ {
					if err := flush(0, t); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				var next atomic.Int64
				b.SetParallelism(max(1, flushers/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					id := next.Add(1)
					for t := 0; pb.Next(); t++ {
						if err := flush(id, t); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(m.Status().JournalSyncs)/float64(b.N), "fsyncs/flush")
			if err := m.AwaitQuiescence(b.Context()); err != nil {
				b.Fatal(err)
			}
		})
	}
}
