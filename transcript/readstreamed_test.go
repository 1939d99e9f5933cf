package transcript_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// streamedSession stores a chain of n one-entry segments of ref in a memory
// bucket and returns it with the segments' keys and the entry ids, in order.
func streamedSession(t *testing.T, n int) (*membucket.Bucket, []string, []string) {
	t.Helper()
	mem := membucket.New()
	s := newStore(t, mem, transcript.Config{})
	ids := appendChain(t, s, ref, newWriter(t, "w"), "e", "", n)
	infos, err := s.ListSegments(t.Context(), ref)
	require.NoError(t, err)
	return mem, infoKeys(infos), ids
}

// pageGate is a bucket whose listing of a session, once it has handed out
// gateAfter keys, waits until a GET has started (at most 10 s), and records
// whether one had; failAfter, when positive, ends the listing with failErr
// after that many keys.
type pageGate struct {
	bucket.Bucket
	gateAfter int
	failAfter int
	failErr   error

	getStarted chan struct{}
	once       sync.Once
	overlapped atomic.Bool
}

func (g *pageGate) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	g.once.Do(func() { close(g.getStarted) })
	return g.Bucket.Get(ctx, key)
}

func (g *pageGate) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	n := 0
	return g.Bucket.List(ctx, opts, func(oi bucket.ObjectInfo) error {
		n++
		if n == g.failAfter+1 && g.failAfter > 0 {
			return g.failErr
		}
		if err := fn(oi); err != nil {
			return err
		}
		if n == g.gateAfter {
			select {
			case <-g.getStarted:
				g.overlapped.Store(true)
			case <-time.After(10 * time.Second):
			}
		}
		return nil
	})
}

// TestReadAll_FetchesWhileListing checks that a cold read of a session of
// more segments than its first page starts fetching that page while the rest
// is listed, and gives what the whole listing holds, in order, whether the
// session fits the first page or not.
func TestReadAll_FetchesWhileListing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, n := range []int{1, 31, 32, 33, 70} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			mem, _, ids := streamedSession(t, n)
			gate := &pageGate{Bucket: mem, gateAfter: 32, getStarted: make(chan struct{})}
			res, err := newStore(t, gate, transcript.Config{}).ReadAll(t.Context(), ref)
			require.NoError(t, err)
			require.Equal(t, ids, entryIDs(res.Entries))
			require.Len(t, res.Segments, n)
			// Below 32 segments the listing is over before anything is
			// fetched; from 32, the first 32 are fetched while it goes on.
			require.Equal(t, n >= 32, gate.overlapped.Load(), "a GET started while the listing went on")
		})
	}
}

// TestReadAll_StreamedFaults covers what can go wrong in either part of a
// streamed read: a segment that vanishes (the read lists again), a corrupt one
// (an error naming it, or skipped), the listing failing after its first page
// (its error, with the fetches already started stopped), and a View hiding some.
func TestReadAll_StreamedFaults(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const n = 70
	for _, at := range []int{5, 50} { // in the first page, after it
		t.Run(fmt.Sprintf("vanished segment %d", at), func(t *testing.T) {
			mem, keys, ids := streamedSession(t, n)
			v := &vanishingKey{Bucket: mem, key: keys[at]}
			res, err := newStore(t, v, transcript.Config{}).ReadAll(t.Context(), ref)
			require.NoError(t, err)
			require.Equal(t, append(append([]string{}, ids[:at]...), ids[at+1:]...), entryIDs(res.Entries),
				"the vanished segment is left out by the second listing")
			require.Equal(t, int32(1), v.vanished.Load())
		})
		t.Run(fmt.Sprintf("corrupt segment %d", at), func(t *testing.T) {
			mem, keys, ids := streamedSession(t, n)
			data := readObject(t, mem, keys[at])
			data[len(data)-3] ^= 0xff
			require.NoError(t, mem.Replace(t.Context(), keys[at], bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
			_, err := newStore(t, mem, transcript.Config{}).ReadAll(t.Context(), ref)
			require.ErrorIs(t, err, segment.ErrCorrupt)
			require.ErrorContains(t, err, keys[at])
			res, err := newStore(t, mem, transcript.Config{SkipCorrupt: true}).ReadAll(t.Context(), ref)
			require.NoError(t, err)
			require.Len(t, res.Corrupt, 1)
			require.Equal(t, keys[at], res.Corrupt[0].Key)
			require.Len(t, res.Entries, n-1)
			require.NotContains(t, entryIDs(res.Entries), ids[at])
		})
	}
	t.Run("listing fails after the first page", func(t *testing.T) {
		mem, _, _ := streamedSession(t, n)
		boom := errors.New("listing broke")
		gate := &pageGate{Bucket: mem, gateAfter: 32, failAfter: 40, failErr: boom, getStarted: make(chan struct{})}
		_, err := newStore(t, gate, transcript.Config{}).ReadAll(t.Context(), ref)
		require.ErrorIs(t, err, boom)
		require.True(t, gate.overlapped.Load())
	})
	t.Run("view", func(t *testing.T) {
		mem, keys, ids := streamedSession(t, n)
		s := newStore(t, mem, transcript.Config{})
		kept := map[string]bool{}
		var want []string
		for i, k := range keys {
			if i%3 != 1 {
				kept[k] = true
				want = append(want, ids[i])
			}
		}
		res, err := s.View(func(in transcript.SegmentInfo) bool { return kept[in.Key] }).ReadAll(t.Context(), ref)
		require.NoError(t, err)
		require.ElementsMatch(t, want, entryIDs(res.Entries))
		require.Len(t, res.Segments, len(want))
	})
}

// vanishingKey deletes key the first time it is fetched, as a compaction
// might between a listing and a GET.
type vanishingKey struct {
	bucket.Bucket
	key      string
	vanished atomic.Int32
}

func (v *vanishingKey) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if key == v.key && v.vanished.CompareAndSwap(0, 1) {
		if err := v.Bucket.Delete(ctx, key); err != nil {
			return nil, bucket.ObjectInfo{}, err
		}
	}
	return v.Bucket.Get(ctx, key)
}

func readObject(t *testing.T, b bucket.Bucket, key string) []byte {
	t.Helper()
	rc, _, err := b.Get(t.Context(), key)
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return data
}
