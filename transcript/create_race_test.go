package transcript_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// putBarriers makes the writes of a bucket meet in pairs: each Put waits until
// two have begun, and returns once both are done. Two writers that each check,
// write and list again have then both checked before either writes, and both
// written before either lists again, whatever else they list.
type putBarriers struct {
	bucket.Bucket
	began, done sync.WaitGroup
}

func newPutBarriers(b bucket.Bucket) *putBarriers {
	p := &putBarriers{Bucket: b}
	p.began.Add(2)
	p.done.Add(2)
	return p
}

func (b *putBarriers) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	b.began.Done()
	if !waitGroup(&b.began) {
		return context.DeadlineExceeded
	}
	err := b.Bucket.Put(ctx, key, r, size, opts)
	b.done.Done()
	if !waitGroup(&b.done) {
		return context.DeadlineExceeded
	}
	return err
}

// waitGroup waits for wg, at most 10 seconds; false when it ran out.
func waitGroup(wg *sync.WaitGroup) bool {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// TestStore_CreateSessionDefaultRace: of two default-mode creates of one
// session that both find it absent and both write their first segment, the one
// whose segment sorts first (whose header readers take) succeeds; the other
// deletes its segment and gets bucket.ErrExists, so that no client is told it
// created a session whose header is another's.
func TestStore_CreateSessionDefaultRace(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, newPutBarriers(membucket.New()), transcript.Config{})
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
