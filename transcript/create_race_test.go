package transcript_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// listBarriers makes the listings of a bucket meet in pairs: the first two
// wait for each other, then the next two, so two writers that each list, write
// and list again both write before either lists again.
type listBarriers struct {
	bucket.Bucket
	mu    sync.Mutex
	calls int
	gates [2]chan struct{}
}

func newListBarriers(b bucket.Bucket) *listBarriers {
	return &listBarriers{Bucket: b, gates: [2]chan struct{}{make(chan struct{}), make(chan struct{})}}
}

func (b *listBarriers) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	b.mu.Lock()
	b.calls++
	n := b.calls
	b.mu.Unlock()
	if n <= 4 {
		gate := b.gates[(n-1)/2]
		if n%2 == 0 {
			close(gate)
		}
		select {
		case <-gate:
		case <-time.After(10 * time.Second):
			return context.DeadlineExceeded
		}
	}
	return b.Bucket.List(ctx, opts, fn)
}

// TestStore_CreateSessionDefaultRace: of two default-mode creates of one
// session that both find it absent and both write their first segment, the one
// whose segment sorts first (whose header readers take) succeeds; the other
// deletes its segment and gets bucket.ErrExists, so that no client is told it
// created a session whose header is another's.
func TestStore_CreateSessionDefaultRace(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newListBarriers(membucket.New()), transcript.Config{})
	type result struct {
		info transcript.SegmentInfo
		err  error
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			results[i].info, _, results[i].err = s.CreateSession(ctx, strictRef, [][]byte{header}, transcript.NewRandomWriter(), transcript.CreateOptions{})
		})
	}
	wg.Wait()
	var won []transcript.SegmentInfo
	for _, r := range results {
		if r.err != nil {
			require.ErrorIs(t, r.err, bucket.ErrExists)
			continue
		}
		won = append(won, r.info)
	}
	require.Len(t, won, 1, "one create succeeds")
	infos, err := s.ListSegments(ctx, strictRef)
	require.NoError(t, err)
	require.Len(t, infos, 1, "the loser's segment is deleted")
	require.Equal(t, won[0].Key, infos[0].Key)
}
