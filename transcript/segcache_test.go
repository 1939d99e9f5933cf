package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
)

// requireSameRead checks that got is the read want is: entries (bytes, ids,
// origins), segments, conflicts and corrupt segments.
func requireSameRead(t *testing.T, want, got *transcript.MergeResult) {
	t.Helper()
	require.Equal(t, want.Raw(), got.Raw())
	require.Equal(t, ids(want), ids(got))
	require.Equal(t, want.Segments, got.Segments)
	require.Equal(t, len(want.Conflicts), len(got.Conflicts))
	require.Equal(t, len(want.Corrupt), len(got.Corrupt))
	for i := range want.Entries {
		require.Equal(t, want.Entries[i].Origin, got.Entries[i].Origin, "origin of %s", want.Entries[i].ID)
	}
}

// TestSegmentCache_FetchesOnlyWhatIsNew reads a session through a store with a
// segment cache, changes it in each way a listing can show, and reads it again:
// the second read gives what a store without a cache gives, and GETs only the
// segments the first one did not fetch.
func TestSegmentCache_FetchesOnlyWhatIsNew(t *testing.T) {
	cases := []struct {
		name string
		// change alters the session after the first read; plain reads it.
		change func(t *testing.T, plain *transcript.Store)
		// read is the second read, through the cached store.
		read func(s *transcript.Store, first *transcript.MergeResult) (*transcript.MergeResult, error)
		// gets is how many GETs the second read sends.
		gets int64
		want []string
	}{
		{"unchanged", func(*testing.T, *transcript.Store) {}, readAll, 0, []string{"a", "b", "c"}},
		{"unchanged, read knowing its segments", func(*testing.T, *transcript.Store) {}, readKnown, 0, []string{"a", "b", "c"}},
		{"a segment added", func(t *testing.T, plain *transcript.Store) {
			_, err := plain.AppendSegment(context.Background(), ref, [][]byte{entry("d", "c")}, newWriter(t, "w2"))
			require.NoError(t, err)
		}, readAll, 1, []string{"a", "b", "c", "d"}},
		{"compacted", func(t *testing.T, plain *transcript.Store) {
			_, err := plain.Compact(context.Background(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
		}, readAll, 1, []string{"a", "b", "c"}},
		{"a segment added, then compacted", func(t *testing.T, plain *transcript.Store) {
			_, err := plain.AppendSegment(context.Background(), ref, [][]byte{entry("d", "c")}, newWriter(t, "w2"))
			require.NoError(t, err)
			_, err = plain.Compact(context.Background(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
		}, readKnown, 1, []string{"a", "b", "c", "d"}},
		{"a conflicting version added", func(t *testing.T, plain *transcript.Store) {
			other := bytes.Replace(entry("b", "a"), []byte("hi b"), []byte("hi B"), 1)
			_, err := plain.AppendSegment(context.Background(), ref, [][]byte{other}, newWriter(t, "w0"))
			require.NoError(t, err)
		}, readAll, 1, []string{"a", "b", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			fb := faultbucket.Wrap(newBucket(t))
			plain := newStore(t, fb, transcript.Config{})
			cache := transcript.NewSegmentCache(1 << 20)
			cached := newStore(t, fb, transcript.Config{SegmentCache: cache})
			w := newWriter(t, "w1")
			for _, batch := range [][][]byte{{entry("a", "")}, {entry("b", "a")}, {entry("c", "b")}} {
				_, err := plain.AppendSegment(ctx, ref, batch, w)
				require.NoError(t, err)
			}
			first, err := cached.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, 3, cache.Stats().Segments)
			c.change(t, plain)

			want, err := plain.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, c.want, ids(want))
			fb.ResetCounts()
			got, err := c.read(cached, first)
			require.NoError(t, err)
			requireSameRead(t, want, got)
			require.Equal(t, c.gets, fb.Counts().Get, "GETs of the second read")
			require.Equal(t, int64(1), fb.Counts().List, "one listing")
		})
	}
}

func readAll(s *transcript.Store, _ *transcript.MergeResult) (*transcript.MergeResult, error) {
	return s.ReadAll(context.Background(), ref)
}

func readKnown(s *transcript.Store, first *transcript.MergeResult) (*transcript.MergeResult, error) {
	return s.ReadAllKnown(context.Background(), ref, first.Segments)
}

// TestSegmentCache_Budget: the cache keeps the most recently used segments
// within its budget, and none larger than it.
func TestSegmentCache_Budget(t *testing.T) {
	ctx := context.Background()
	fb := faultbucket.Wrap(newBucket(t))
	plain := newStore(t, fb, transcript.Config{})
	w := newWriter(t, "w1")
	parent := ""
	for i := range 4 {
		id := fmt.Sprintf("e%d", i)
		_, err := plain.AppendSegment(ctx, ref, [][]byte{entry(id, parent)}, w)
		require.NoError(t, err)
		parent = id
	}
	big := bytes.Repeat([]byte("x"), 4096)
	bigRef := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "big"}
	_, err := plain.AppendSegment(ctx, bigRef, [][]byte{bytes.Replace(entry("b", ""), []byte("hi b"), big, 1)}, w)
	require.NoError(t, err)

	// Room for two of the four small segments, not for the big one.
	one := int64(len(entry("e0", ""))) + 160*2 + 100
	cache := transcript.NewSegmentCache(2 * one)
	cached := newStore(t, fb, transcript.Config{SegmentCache: cache})
	_, err = cached.ReadAll(ctx, ref)
	require.NoError(t, err)
	st := cache.Stats()
	require.Equal(t, 2, st.Segments)
	require.LessOrEqual(t, st.Bytes, 2*one)
	require.Equal(t, uint64(4), st.Misses)

	fb.ResetCounts()
	_, err = cached.ReadAll(ctx, ref)
	require.NoError(t, err)
	gets := fb.Counts().Get
	require.GreaterOrEqual(t, gets, int64(2), "the two segments evicted are fetched again")
	require.Equal(t, uint64(4)+uint64(gets), cache.Stats().Misses, "a GET for each miss, none for a hit")
	require.Equal(t, 2, cache.Stats().Segments)

	_, err = cached.ReadAll(ctx, bigRef)
	require.NoError(t, err)
	fb.ResetCounts()
	_, err = cached.ReadAll(ctx, bigRef)
	require.NoError(t, err)
	require.Equal(t, int64(1), fb.Counts().Get, "a segment past the budget is not kept")
	require.Equal(t, 2, cache.Stats().Segments)

	none := transcript.NewSegmentCache(0)
	s0 := newStore(t, fb, transcript.Config{SegmentCache: none})
	_, err = s0.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Zero(t, none.Stats().Segments)
}

// TestSegmentCache_CorruptNotKept: a segment that fails verification is
// reported by every read, never served from the cache.
func TestSegmentCache_CorruptNotKept(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	cache := transcript.NewSegmentCache(1 << 20)
	s := newStore(t, b, transcript.Config{SegmentCache: cache, SkipCorrupt: true})
	w := newWriter(t, "w1")
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", "")}, w)
	require.NoError(t, err)
	info, err := s.AppendSegment(ctx, ref, [][]byte{entry("b", "a")}, w)
	require.NoError(t, err)
	garbage := []byte("not a segment at all")
	require.NoError(t, b.Delete(ctx, info.Key))
	require.NoError(t, b.Put(ctx, info.Key, bytes.NewReader(garbage), int64(len(garbage)), bucket.PutOptions{}))
	for range 2 {
		res, err := s.ReadAll(ctx, ref)
		require.NoError(t, err)
		require.Len(t, res.Corrupt, 1)
		require.Equal(t, info.Key, res.Corrupt[0].Key)
		require.Equal(t, []string{"a"}, ids(res))
	}
	require.Equal(t, 1, cache.Stats().Segments, "only the sound segment is kept")
}

// TestSegmentCache_LeanReadsLeaveItWhole: the lean reads, which drop a
// segment's index and origins as they merge, do not take (or spoil) the cached
// segments: a read after one gives the origins a plain store gives.
func TestSegmentCache_LeanReadsLeaveItWhole(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	plain := newStore(t, b, transcript.Config{})
	w := newWriter(t, "w1")
	for _, batch := range [][][]byte{{entry("a", "")}, {entry("b", "a")}, {entry("c", "b")}} {
		_, err := plain.AppendSegment(ctx, ref, batch, w)
		require.NoError(t, err)
	}
	_, err := plain.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	want, err := plain.ReadAll(ctx, ref)
	require.NoError(t, err)

	cached := newStore(t, b, transcript.Config{SegmentCache: transcript.NewSegmentCache(1 << 20)})
	_, err = cached.ReadAll(ctx, ref)
	require.NoError(t, err)
	lean, err := cached.ReadLean(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, 3, lean.Len())
	got, err := cached.ReadAll(ctx, ref)
	require.NoError(t, err)
	requireSameRead(t, want, got)
}

// TestSegmentCache_Concurrent reads sessions through stores sharing a small
// cache from many goroutines (run with -race), the cache evicting as they go:
// every read gives what a plain store gives.
func TestSegmentCache_Concurrent(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	plain := newStore(t, b, transcript.Config{})
	cache := transcript.NewSegmentCache(4 << 10)
	stores := []*transcript.Store{
		newStore(t, b, transcript.Config{SegmentCache: cache}),
		newStore(t, b, transcript.Config{SegmentCache: cache}),
	}
	refs := make([]transcript.TranscriptRef, 3)
	for i := range refs {
		refs[i] = transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: fmt.Sprintf("c%d", i)}
		parent := ""
		for j := range 8 {
			id := fmt.Sprintf("e%d", j)
			_, err := plain.AppendSegment(ctx, refs[i], [][]byte{entry(id, parent)}, newWriter(t, "w1"))
			require.NoError(t, err)
			parent = id
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 10 {
				r := refs[(g+k)%len(refs)]
				got, err := stores[g%2].ReadAll(ctx, r)
				if err != nil {
					errs <- err
					return
				}
				want, err := plain.ReadAll(ctx, r)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(bytes.Join(got.Raw(), []byte("\n")), bytes.Join(want.Raw(), []byte("\n"))) {
					errs <- fmt.Errorf("read of %s through the cache differs from a plain read", r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := cache.Stats()
	require.Positive(t, st.Hits)
	require.LessOrEqual(t, st.Bytes, int64(4<<10))
}
