package transcript_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestRead_SeesTheParentAcrossListingPages is
// TestReadAll_SeesTheParentOfWhatItSees at the boundary of the S3 listing's
// own pages (1,000 keys) rather than the cold read's first page of 32: a
// segment whose key sorts inside the listing's first 1,000 keys lands after
// they were listed (an outbox that waited out an outage, a replica whose clock
// is behind), then its child, which sorts last. A read that shows the child
// must show its parent.
func TestRead_SeesTheParentAcrossListingPages(t *testing.T) {
	if testing.Short() {
		t.Skip("appends 1,010 segments")
	}
	const pageSize = 1000 // what MinIO and SeaweedFS answer per ListObjectsV2 request
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := newBucket(t)
			s := newStore(t, b, transcript.Config{})
			ids := appendChain(t, s, ref, newWriter(t, "w"), "e", "", pageSize+10)
			behind := newStore(t, b, transcript.Config{Now: func() time.Time { return time.Now().Add(-time.Hour) }})
			// Each read lands its own parent and child, p-NAME and c-NAME.
			for _, read := range []struct {
				name string
				fn   func(s *transcript.Store, child string) ([]string, error)
			}{
				{"ReadAll", func(s *transcript.Store, _ string) ([]string, error) {
					got, err := s.ReadAll(ctx, ref)
					if err != nil {
						return nil, err
					}
					return entryIDs(got.Dangling()), nil
				}},
				{"ReadLean", func(s *transcript.Store, child string) ([]string, error) {
					got, err := s.ReadLean(ctx, ref)
					if err != nil {
						return nil, err
					}
					if i, ok := got.Index(child); ok {
						if _, ok := got.Parent(i); !ok {
							return []string{child}, nil
						}
					}
					return nil, nil
				}},
			} {
				parent, child := "p-"+read.name, "c-"+read.name
				land := func() {
					_, err := behind.AppendSegment(ctx, ref, [][]byte{entry(parent, ids[len(ids)-1])}, newWriter(t, "behind"))
					require.NoError(t, err)
					_, err = s.AppendSegment(ctx, ref, [][]byte{entry(child, parent)}, newWriter(t, "w2"))
					require.NoError(t, err)
				}
				t.Run(read.name, func(t *testing.T) {
					l := &landsDuringListing{Bucket: b, after: pageSize, land: land, when: func(opts bucket.ListOptions) bool {
						return opts.FirstPage == 0 && opts.StartAfter == "" // a whole listing
					}}
					dangling, err := read.fn(newStore(t, l, transcript.Config{}), child)
					require.NoError(t, err)
					landed := false
					l.once.Do(func() { landed = true })
					require.False(t, landed, "the segments did not land during the read's listing")
					require.Empty(t, dangling, "an entry without its parent")
				})
			}
		})
	}
}

// TestRead_DanglingForGoodCostsOneList: a session whose entry lacks its parent
// for good (its segment lost) is read with one LIST more, which finds nothing
// new, and no segment fetched twice; a session without one costs one LIST (two
// for ReadAll's streamed read: its first page, then the whole listing).
func TestRead_DanglingForGoodCostsOneList(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		parent   string
		segments int
		lists    int64
	}{
		{"whole, few segments", "", 3, 1},
		{"whole, streamed", "", 40, 2}, // the first page, then the whole listing
		{"dangling, few segments", "lost", 3, 2},
		{"dangling, streamed", "lost", 40, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fb := faultbucket.Wrap(membucket.New())
			s := newStore(t, fb, transcript.Config{})
			want := appendChain(t, s, ref, newWriter(t, "w"), "e", tc.parent, tc.segments)
			for _, read := range []struct {
				name string
				fn   func() ([]string, error)
			}{
				{"ReadAll", func() ([]string, error) {
					got, err := s.ReadAll(ctx, ref)
					if err != nil {
						return nil, err
					}
					return ids(got), nil
				}},
				{"ReadAllKnown", func() ([]string, error) {
					known, err := s.ListSegments(ctx, ref)
					if err != nil {
						return nil, err
					}
					fb.ResetCounts()
					got, err := s.ReadAllKnown(ctx, ref, known)
					if err != nil {
						return nil, err
					}
					return ids(got), nil
				}},
				{"ReadLean", func() ([]string, error) {
					got, err := s.ReadLean(ctx, ref)
					if err != nil {
						return nil, err
					}
					out := make([]string, got.Len())
					for i := range out {
						out[i] = got.ID(i)
					}
					return out, nil
				}},
			} {
				fb.ResetCounts()
				got, err := read.fn()
				require.NoError(t, err, read.name)
				require.Equal(t, want, got, read.name)
				c := fb.Counts()
				lists := tc.lists
				if read.name != "ReadAll" && tc.segments > 32 {
					lists-- // the others list once, whole
				}
				require.Equal(t, lists, c.List, "%s: LISTs", read.name)
				require.Equal(t, int64(tc.segments), c.Get, "%s: each segment fetched once", read.name)
			}
		})
	}
}

// hidesFromFirstListing is a bucket whose first listing leaves out the keys in
// hide, as a listing that walked past a segment before it landed would.
type hidesFromFirstListing struct {
	bucket.Bucket
	hide map[string]bool
	once sync.Once
}

func (h *hidesFromFirstListing) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	first := false
	h.once.Do(func() { first = true })
	return h.Bucket.List(ctx, opts, func(oi bucket.ObjectInfo) error {
		if first && h.hide[oi.Key] {
			return nil
		}
		return fn(oi)
	})
}

// TestListed_ReadLeanSeesTheParent: a namespace listing that missed a parent
// but shows its child (the listing restore and export of many sessions read
// from) gives the session with both: the session is read from a listing of its
// own.
func TestListed_ReadLeanSeesTheParent(t *testing.T) {
	ctx := context.Background()
	mem := membucket.New()
	s := newStore(t, mem, transcript.Config{})
	w := newWriter(t, "w")
	want := appendChain(t, s, ref, w, "e", "", 3)
	before, err := s.ListSegments(ctx, ref)
	require.NoError(t, err)
	want = append(want, appendChain(t, s, ref, w, "p", want[len(want)-1], 1)...)
	after, err := s.ListSegments(ctx, ref)
	require.NoError(t, err)
	require.Len(t, after, len(before)+1)
	hide := addedKeys(before, after)
	want = append(want, appendChain(t, s, ref, w, "c", want[len(want)-1], 1)...)

	h := &hidesFromFirstListing{Bucket: mem, hide: hide}
	reader := newStore(t, h, transcript.Config{})
	var got []string
	err = reader.ForEachListedSession(ctx, ref.Namespace, ref.AgentID, 1, func(ctx context.Context, l *transcript.Listed) error {
		res, err := l.ReadLean(ctx, l.Ref())
		if err != nil {
			return err
		}
		for i := range res.Len() {
			got = append(got, res.ID(i))
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestReadNew_FullListingHealsOnlyAWholeRead: ReadNew's full listing (a
// reconcile) of a reader that holds segments lists the session once, though
// the new entries' parents are in what the reader holds, not in the increment;
// a ReadNew of an empty set reads the whole session and heals it as ReadAll
// does, finding a parent its first listing missed with one LIST more.
func TestReadNew_FullListingHealsOnlyAWholeRead(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		holds  bool  // the reader holds the session's first segments
		hide   bool  // the first listing misses the parent of the newest entry
		lists  int64 // LISTs of the ReadNew
		newIDs int   // entries of the increment
	}{
		{name: "holder", holds: true, lists: 1, newIDs: 2},
		{name: "holder, parent behind the listing", holds: true, hide: true, lists: 1, newIDs: 1},
		{name: "empty set", lists: 1, newIDs: 5},
		{name: "empty set, parent behind the listing", hide: true, lists: 2, newIDs: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := membucket.New()
			s := newStore(t, mem, transcript.Config{})
			w := newWriter(t, "w")
			held := appendChain(t, s, ref, w, "e", "", 3)
			var have transcript.SegmentSet
			if tc.holds {
				inc, err := s.ReadNew(ctx, ref, transcript.NewSegmentSet())
				require.NoError(t, err)
				require.Equal(t, held, entryIDs(inc.Entries))
				have = inc.Have.Reconcile() // the next ReadNew lists the whole session
			}
			before, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			parent := appendChain(t, s, ref, w, "p", held[len(held)-1], 1)
			after, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			hide := map[string]bool{}
			if tc.hide {
				hide = addedKeys(before, after)
			}
			appendChain(t, s, ref, w, "c", parent[0], 1)

			fb := faultbucket.Wrap(&hidesFromFirstListing{Bucket: mem, hide: hide})
			inc, err := newStore(t, fb, transcript.Config{}).ReadNew(ctx, ref, have)
			require.NoError(t, err)
			require.True(t, inc.Full)
			require.Len(t, inc.Entries, tc.newIDs)
			require.Equal(t, tc.lists, fb.Counts().List, "LISTs")
		})
	}
}

// addedKeys returns the keys of the listing after that the listing before
// lacks: the segments appended between the two.
func addedKeys(before, after []transcript.SegmentInfo) map[string]bool {
	added := map[string]bool{}
	for _, in := range after {
		if !slices.ContainsFunc(before, func(b transcript.SegmentInfo) bool { return b.Key == in.Key }) {
			added[in.Key] = true
		}
	}
	return added
}
