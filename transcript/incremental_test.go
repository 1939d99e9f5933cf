package transcript_test

import (
	"context"
	"io"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// fetchCounter counts whole-object GETs and ranged reads, by key.
type fetchCounter struct {
	bucket.Bucket
	mu     sync.Mutex
	gets   map[string]int
	ranges int
}

func newFetchCounter(inner bucket.Bucket) *fetchCounter {
	return &fetchCounter{Bucket: inner, gets: map[string]int{}}
}

func (c *fetchCounter) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	c.mu.Lock()
	c.gets[key]++
	c.mu.Unlock()
	return c.Bucket.Get(ctx, key)
}

func (c *fetchCounter) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	c.mu.Lock()
	c.ranges++
	c.mu.Unlock()
	return c.Bucket.(bucket.RangeReader).GetRange(ctx, key, off, n)
}

// take returns the keys fetched whole and the ranged reads since the last call.
func (c *fetchCounter) take() ([]string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k, n := range c.gets {
		for range n {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	r := c.ranges
	c.gets, c.ranges = map[string]int{}, 0
	return keys, r
}

func entryIDs(entries []transcript.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID
	}
	return out
}

func infoKeys(infos []transcript.SegmentInfo) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Key
	}
	return out
}

func TestStore_ReadNew_FetchesOnlyNewSegments(t *testing.T) {
	ctx := context.Background()
	fc := newFetchCounter(membucket.New())
	s := newStore(t, fc, transcript.Config{})
	w := newWriter(t, "w1")
	first := appendChain(t, s, ref, w, "a", "", 3)

	inc, err := s.ReadNew(ctx, ref, transcript.SegmentSet{})
	require.NoError(t, err)
	require.Equal(t, first, entryIDs(inc.Entries))
	require.Equal(t, 3, inc.Have.Len())
	require.Equal(t, 3, inc.Listed)
	got, ranges := fc.take()
	require.Len(t, got, 3)
	require.Zero(t, ranges, "an empty reader reads no metadata frames")

	more := appendChain(t, s, ref, w, "b", first[2], 2)
	inc2, err := s.ReadNew(ctx, ref, inc.Have)
	require.NoError(t, err)
	require.Equal(t, more, entryIDs(inc2.Entries))
	require.Equal(t, 5, inc2.Have.Len())
	got, _ = fc.take()
	require.Equal(t, infoKeys(inc2.Segments), got, "only the two new segments are fetched")
	require.Len(t, got, 2)
	require.True(t, inc2.Changed(inc.Have))

	inc3, err := s.ReadNew(ctx, ref, inc2.Have)
	require.NoError(t, err)
	require.Empty(t, inc3.Entries)
	require.False(t, inc3.Changed(inc2.Have))
	got, _ = fc.take()
	require.Empty(t, got)

	_, err = s.ReadNew(ctx, transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "none"}, transcript.SegmentSet{})
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func TestStore_ReadNew_Compaction(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// held is how many of the 6 segments the reader has merged before compaction.
		held int
		// wantFetched is the number of whole objects fetched by the sync after it.
		wantFetched  int
		wantEntries  int
		wantRanges   int
		deleteAtOnce bool
	}{
		{name: "all inputs held", held: 6, wantFetched: 0, wantEntries: 0, wantRanges: 1},
		{name: "all inputs held, inputs deleted", held: 6, wantFetched: 0, wantEntries: 0, wantRanges: 1, deleteAtOnce: true},
		{name: "one small input missing", held: 5, wantFetched: 1, wantEntries: 1, wantRanges: 1},
		{name: "one input missing, inputs deleted", held: 5, wantFetched: 1, wantEntries: 6, wantRanges: 1, deleteAtOnce: true},
		// A claim to supersede hides nothing that exists: while the inputs wait out
		// their delete delay a fresh reader reads them too (see fetchSession).
		{name: "fresh reader", held: 0, wantFetched: 7, wantEntries: 6, wantRanges: 0},
		{name: "fresh reader, inputs deleted", held: 0, wantFetched: 1, wantEntries: 6, wantRanges: 0, deleteAtOnce: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFetchCounter(membucket.New())
			s := newStore(t, fc, transcript.Config{})
			w := newWriter(t, "w")
			ids := appendChain(t, s, ref, w, "e", "", 6)
			infos, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			have := transcript.NewSegmentSet(infoKeys(infos[:tt.held])...)

			opts := transcript.CompactOptions{MinSegments: 2}
			if tt.deleteAtOnce {
				opts.DeleteDelay = transcript.DeleteAtOnce
			}
			_, err = s.Compact(ctx, ref, opts)
			require.NoError(t, err)
			fc.take()

			inc, err := s.ReadNew(ctx, ref, have)
			require.NoError(t, err)
			fetched, ranges := fc.take()
			require.Len(t, fetched, tt.wantFetched, "fetched %v", fetched)
			require.Equal(t, tt.wantRanges, ranges)
			require.Len(t, inc.Entries, tt.wantEntries)
			require.Subset(t, ids, entryIDs(inc.Entries))

			// Whatever was fetched, the reader now holds everything: nothing more
			// to fetch, and the set names only listed segments.
			listed, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, len(listed), inc.Have.Len())
			again, err := s.ReadNew(ctx, ref, inc.Have)
			require.NoError(t, err)
			require.Empty(t, again.Entries)
			fetched, ranges = fc.take()
			require.Empty(t, fetched)
			require.Zero(t, ranges)
		})
	}
}

// Applying increments one after another yields the entries ReadAll returns, while
// writers append and a compactor runs in between.
func TestStore_ReadNew_UnionEqualsReadAll(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	writers := []*transcript.Writer{newWriter(t, "w1"), newWriter(t, "w2")}
	have := transcript.SegmentSet{}
	held := map[string]bool{}
	parent := ""
	for round := range 12 {
		ids := appendChain(t, s, ref, writers[round%2], "r"+string(rune('a'+round)), parent, 1+round%3)
		parent = ids[len(ids)-1]
		switch round % 4 {
		case 1:
			_, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2})
			require.NoError(t, err)
		case 3:
			_, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
		}
		if round%3 == 2 {
			continue // this reader skips a turn
		}
		inc, err := s.ReadNew(ctx, ref, have)
		require.NoError(t, err)
		for _, e := range inc.Entries {
			held[e.ID] = true
		}
		have = inc.Have
		all, err := s.ReadAll(ctx, ref)
		require.NoError(t, err)
		want := map[string]bool{}
		for _, e := range all.Entries {
			want[e.ID] = true
		}
		require.Equal(t, want, held, "round %d", round)
	}
}

// One listing reports every session of a namespace with its segments, and a
// Listed reader reads a session from it with no LIST of its own.
func TestStore_ListSessionSegments(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{Prefix: "p"})
	w := newWriter(t, "w")
	want := map[string]int{}
	for i, sid := range []string{"s1", "s2", "s3"} {
		for _, agent := range []string{"a", "b"} {
			r := transcript.TranscriptRef{Namespace: "acme", AgentID: agent, SessionID: sid}
			appendChain(t, s, r, w, sid+agent, "", i+1)
			want[agent+"/"+sid] = i + 1
		}
	}
	appendChain(t, s, transcript.TranscriptRef{Namespace: "other", AgentID: "a", SessionID: "s1"}, w, "x", "", 2)
	tests := []struct {
		name, agent string
		want        map[string]int
	}{
		{"whole namespace", "", want},
		{"one agent", "b", map[string]int{"b/s1": 1, "b/s2": 2, "b/s3": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]int{}
			var order []string
			require.NoError(t, s.ListSessionSegments(ctx, "acme", tt.agent, func(r transcript.TranscriptRef, infos []transcript.SegmentInfo) error {
				k := r.AgentID + "/" + r.SessionID
				got[k] = len(infos)
				order = append(order, k)
				inc, err := s.Listed(r, infos).ReadNew(ctx, r, transcript.SegmentSet{})
				require.NoError(t, err)
				require.Len(t, inc.Entries, len(infos))
				return nil
			}))
			require.Equal(t, tt.want, got)
			require.IsIncreasing(t, order)
		})
	}
	bound, err := s.WithNamespace("other")
	require.NoError(t, err)
	n := 0
	require.NoError(t, bound.ListSessionSegments(ctx, "acme", "", func(transcript.TranscriptRef, []transcript.SegmentInfo) error { n++; return nil }))
	require.Zero(t, n, "a store bound to another namespace sees nothing")
	gone := transcript.TranscriptRef{Namespace: "acme", AgentID: "a", SessionID: "gone"}
	_, err = s.Listed(gone, nil).ReadNew(ctx, gone, transcript.SegmentSet{})
	require.ErrorIs(t, err, bucket.ErrNotFound)
}
