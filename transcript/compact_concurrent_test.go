package transcript_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// slowBucket gives each write, look and listing a random latency of up to a
// millisecond, as a server's would, so that concurrent runs interleave.
type slowBucket struct{ bucket.Bucket }

func (b slowBucket) pause() { time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond)))) }

func (b slowBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	b.pause()
	return b.Bucket.Put(ctx, key, r, size, opts)
}

func (b slowBucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	b.pause()
	return b.Bucket.Stat(ctx, key)
}

func (b slowBucket) Delete(ctx context.Context, key string) error {
	b.pause()
	return b.Bucket.Delete(ctx, key)
}

// TestCompact_ConcurrentRunsKeepEverything runs three compactions of one session
// at once, staggered, with no delete delay, after each of a bounded number of
// appends, on a plain session and on a strict one: after every round the session
// holds every entry appended so far. Runs that resume one another's outputs are
// what lost whole sessions before the outputs of other runs had to settle
// (TestCompact_TwoRunsDoNotLoseTheOutput pins the interleaving).
func TestCompact_ConcurrentRunsKeepEverything(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "strict"}[strict], func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, slowBucket{membucket.New()}, transcript.Config{})
			w := newWriter(t, "w")
			r := ref
			var want []string
			appendOne := func(id, parent string) error {
				_, err := s.AppendSegment(ctx, r, [][]byte{entry(id, parent)}, w)
				return err
			}
			if strict {
				r = strictRef
				_, _, err := s.CreateSession(ctx, r, [][]byte{header}, w, transcript.CreateOptions{Strict: true})
				require.NoError(t, err)
				appendOne = func(id, parent string) error {
					h, err := s.ReadHead(ctx, r)
					if err != nil {
						return err
					}
					_, _, err = s.CommitSegment(ctx, r, h, [][]byte{entry(id, parent)}, w, id, nil)
					return err
				}
			}
			parent := ""
			const rounds, runs = 60, 3
			for round := range rounds {
				for i := range 2 {
					id := fmt.Sprintf("r%d-%d", round, i)
					require.NoError(t, appendOne(id, parent))
					want, parent = append(want, id), id
				}
				var wg sync.WaitGroup
				errs := make([]error, runs)
				for i := range runs {
					wg.Go(func() {
						// Staggered, so that a run may list while another is
						// between storing its output and marking the inputs.
						time.Sleep(time.Duration(rand.Int64N(int64(4 * time.Millisecond))))
						_, errs[i] = s.Compact(ctx, r, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
					})
				}
				wg.Wait()
				for _, err := range errs {
					require.NoError(t, err)
				}
				got, err := s.ReadAll(ctx, r)
				require.NoError(t, err, "round %d", round)
				require.Empty(t, got.Missing(want), "round %d", round)
			}
		})
	}
}
