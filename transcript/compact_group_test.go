package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// testTarget is the target segment size of these tests: a chain of groupEntries
// entries (about 130 bytes each) is several times larger.
const (
	testTarget   = 1 << 10
	groupEntries = 40
)

// groupOpts are compaction options with the small test target.
func groupOpts(minSegments int, delay time.Duration) transcript.CompactOptions {
	return transcript.CompactOptions{MinSegments: minSegments, DeleteDelay: delay, TargetSegmentSize: testTarget}
}

// readSegments decodes every listed segment of ref at level.
func readSegments(t *testing.T, s *transcript.Store, level int) ([]transcript.SegmentInfo, []*segment.Segment) {
	t.Helper()
	infos, err := s.ListSegments(context.Background(), ref)
	require.NoError(t, err)
	var outInfos []transcript.SegmentInfo
	var segs []*segment.Segment
	for _, in := range infos {
		if in.Level != level {
			continue
		}
		seg, err := s.ReadSegment(context.Background(), in.Key)
		require.NoError(t, err)
		outInfos, segs = append(outInfos, in), append(segs, seg)
	}
	return outInfos, segs
}

// requireGroup checks that segs form one whole group of bounded parts naming
// inputs inputs, and returns its id.
func requireGroup(t *testing.T, segs []*segment.Segment, inputs int) string {
	t.Helper()
	require.Greater(t, len(segs), 1, "the output is split")
	id := segs[0].Meta.Group.ID
	require.NotEmpty(t, id)
	seen := map[uint32]bool{}
	for _, seg := range segs {
		g := seg.Meta.Group
		require.Equal(t, id, g.ID, "one group")
		require.Equal(t, uint32(len(segs)), g.Parts)
		require.False(t, seen[g.Part], "part numbers are distinct")
		seen[g.Part] = true
		require.LessOrEqual(t, seg.Meta.RawLen, uint64(testTarget), "each part stays within the target")
		require.Len(t, seg.Meta.Inputs, inputs, "every part names every input")
	}
	return id
}

func TestCompact_GroupOfParts(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, newBucket(t), transcript.Config{Prefix: "p"})
			w := newWriter(t, "replica-a")
			want := appendChain(t, s, ref, w, "e", "", groupEntries)
			before, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)

			res, err := s.Compact(ctx, ref, groupOpts(4, transcript.DeleteAtOnce))
			require.NoError(t, err)
			require.Len(t, res.Compactions, 1)
			c := res.Compactions[0]
			require.Equal(t, groupEntries, c.Entries)
			require.Equal(t, c.Outputs[0], c.Output)
			require.Equal(t, len(c.Outputs), res.SegmentsOut())
			require.Equal(t, groupEntries, res.Deleted)
			require.Equal(t, map[int]int{1: len(c.Outputs)}, levels(t, s, ref), "only the parts are left")
			_, parts := readSegments(t, s, 1)
			requireGroup(t, parts, groupEntries)

			after, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, want, ids(after))
			require.Equal(t, before.Raw(), after.Raw(), "the parts read back byte for byte, in order")
			require.Equal(t, leafOf(t, before), leafOf(t, after))

			again, err := s.Compact(ctx, ref, groupOpts(4, transcript.DeleteAtOnce))
			require.NoError(t, err)
			require.Empty(t, again.Compactions, "a whole group counts as one unit: nothing to do")
			require.Zero(t, again.Marked+again.Deleted)

			// More writes, then a lower threshold: the new level-1 output and the
			// group are merged into one group of level 2.
			more := appendChain(t, s, ref, w, "f", want[len(want)-1], 4)
			res, err = s.Compact(ctx, ref, groupOpts(2, transcript.DeleteAtOnce))
			require.NoError(t, err)
			require.Len(t, res.Compactions, 2, "level 0, then level 1")
			lv := levels(t, s, ref)
			require.Len(t, lv, 1, "one level left: %v", lv)
			require.Contains(t, lv, 2)
			l1 := res.Compactions[1]
			require.Equal(t, 1, l1.Level)
			_, top := readSegments(t, s, 2)
			requireGroup(t, top, len(l1.Inputs))
			final, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, append(want, more...), ids(final))
		})
	}
}

// failingPart fails the failAt-th PUT of a level-1 segment: a job that dies between
// two parts of a group.
type failingPart struct {
	bucket.Bucket
	failAt int32
	puts   atomic.Int32
}

func (b *failingPart) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if strings.Contains(key, "/L1/") && b.puts.Add(1) == b.failAt {
		return errInjected
	}
	return b.Bucket.Put(ctx, key, r, size, opts)
}

func TestCompact_CrashBetweenParts(t *testing.T) {
	for name, newBucket := range testBackends() {
		for _, k := range []int32{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/part%d", name, k), func(t *testing.T) {
				ctx := context.Background()
				fb := &failingPart{Bucket: newBucket(t), failAt: k}
				s := newStore(t, fb, transcript.Config{})
				want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", groupEntries)
				before, err := s.ReadAll(ctx, ref)
				require.NoError(t, err)

				_, err = s.Compact(ctx, ref, groupOpts(4, transcript.DeleteAtOnce))
				require.ErrorIs(t, err, errInjected)
				partial := int(k - 1)
				wantLevels := map[int]int{0: groupEntries}
				if partial > 0 {
					wantLevels[1] = partial
				}
				require.Equal(t, wantLevels, levels(t, s, ref), "nothing deleted, %d parts stored", partial)
				got, err := s.ReadAll(ctx, ref)
				require.NoError(t, err)
				require.Equal(t, before.Raw(), got.Raw(), "a partial group hides nothing")
				if partial > 0 {
					// An incremental reader agrees, and a part of an incomplete
					// group excuses no input: a damaged one fails the read, as it
					// fails ReadAll, instead of being skipped silently.
					inc, err := s.ReadNew(ctx, ref, transcript.SegmentSet{})
					require.NoError(t, err)
					require.Len(t, inc.Entries, len(before.Entries))
					infos, err := s.ListSegments(ctx, ref)
					require.NoError(t, err)
					require.Zero(t, infos[0].Level)
					rc, _, err := fb.Bucket.Get(ctx, infos[0].Key)
					require.NoError(t, err)
					original, err := io.ReadAll(rc)
					require.NoError(t, err)
					require.NoError(t, rc.Close())
					require.NoError(t, fb.Bucket.Delete(ctx, infos[0].Key))
					require.NoError(t, fb.Bucket.Put(ctx, infos[0].Key, strings.NewReader("damaged"), 7, bucket.PutOptions{}))
					_, err = s.ReadAll(ctx, ref)
					require.Error(t, err)
					_, err = s.ReadNew(ctx, ref, transcript.SegmentSet{})
					require.Error(t, err, "ReadNew excuses a damaged input by a part of an incomplete group")
					require.NoError(t, fb.Bucket.Delete(ctx, infos[0].Key))
					require.NoError(t, fb.Bucket.Put(ctx, infos[0].Key, bytes.NewReader(original), int64(len(original)), bucket.PutOptions{}))
				}

				// The rerun redoes the job: a new whole group, then the inputs go.
				res, err := s.Compact(ctx, ref, groupOpts(4, transcript.DeleteAtOnce))
				require.NoError(t, err)
				require.Len(t, res.Compactions, 1)
				require.Equal(t, groupEntries, res.Deleted)
				require.Equal(t, map[int]int{1: partial + len(res.Compactions[0].Outputs)}, levels(t, s, ref))
				got, err = s.ReadAll(ctx, ref)
				require.NoError(t, err)
				require.Equal(t, want, ids(got))
				require.Equal(t, before.Raw(), got.Raw())

				// The parts left over are merged at the next level like any segment.
				_, err = s.Compact(ctx, ref, groupOpts(2, transcript.DeleteAtOnce))
				require.NoError(t, err)
				lv := levels(t, s, ref)
				if partial > 0 {
					require.Equal(t, []int{2}, keysOf(lv))
				}
				got, err = s.ReadAll(ctx, ref)
				require.NoError(t, err)
				require.Equal(t, before.Raw(), got.Raw())
			})
		}
	}
}

// leafOf returns the active leaf of a read.
func leafOf(t *testing.T, res *transcript.MergeResult) string {
	t.Helper()
	entries := make([]pi.Entry, len(res.Entries))
	for i, e := range res.Entries {
		pe, err := pi.ParseEntry(e.Raw)
		require.NoError(t, err)
		entries[i] = pe
	}
	return pi.ActiveLeafID(entries)
}

// keysOf returns the levels present in lv, in order.
func keysOf(lv map[int]int) []int {
	var out []int
	for l := range 256 {
		if lv[l] > 0 {
			out = append(out, l)
		}
	}
	return out
}

// putForged stores seg's entries, re-encoded with meta, as a level-1 segment beside
// like (its key with the new checksum).
func putForged(t *testing.T, b bucket.Bucket, like string, meta segment.Meta, entries [][]byte) string {
	t.Helper()
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	data, m, err := enc.Encode(meta, entries)
	require.NoError(t, err)
	key := like[:strings.LastIndex(like, "-")+1] + fmt.Sprintf("%016x", m.Checksum) + transcript.SegmentExt
	require.NoError(t, b.Put(context.Background(), key, strings.NewReader(string(data)), int64(len(data)), bucket.PutOptions{}))
	return key
}

func TestCompact_IncompleteGroupKeepsInputs(t *testing.T) {
	cases := []struct {
		name string
		// damage changes the stored group (parts in part order).
		damage func(t *testing.T, b bucket.Bucket, parts []transcript.SegmentInfo, segs []*segment.Segment)
		// wantErr: the damage is a forged claim Compact reports.
		wantErr bool
		// anyDeleted: inputs whose entries the remaining parts hold may go.
		anyDeleted bool
	}{
		{name: "missing part", damage: func(t *testing.T, b bucket.Bucket, parts []transcript.SegmentInfo, _ []*segment.Segment) {
			require.NoError(t, b.Delete(context.Background(), parts[1].Key))
		}},
		{name: "forged part lacks entries", wantErr: true, anyDeleted: true,
			damage: func(t *testing.T, b bucket.Bucket, parts []transcript.SegmentInfo, segs []*segment.Segment) {
				m := segs[1].Meta
				m.Index, m.Origins = nil, nil
				require.NoError(t, b.Delete(context.Background(), parts[1].Key))
				putForged(t, b, parts[1].Key, m, segs[1].Entries[:1])
			}},
		{name: "extra part repeats a number", damage: func(t *testing.T, b bucket.Bucket, parts []transcript.SegmentInfo, segs []*segment.Segment) {
			m := segs[0].Meta
			m.Index, m.Origins = nil, nil
			putForged(t, b, parts[0].Key, m, segs[0].Entries[:1])
		}},
		{name: "part claims another part count", damage: func(t *testing.T, b bucket.Bucket, parts []transcript.SegmentInfo, segs []*segment.Segment) {
			m := segs[1].Meta
			m.Index, m.Origins = nil, nil
			m.Group.Parts++
			require.NoError(t, b.Delete(context.Background(), parts[1].Key))
			putForged(t, b, parts[1].Key, m, segs[1].Entries)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := membucket.New()
			s := newStore(t, b, transcript.Config{})
			want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", groupEntries)
			inputs, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			// Compact and mark, but keep the inputs for an hour.
			res, err := s.Compact(ctx, ref, groupOpts(4, time.Hour))
			require.NoError(t, err)
			require.Equal(t, groupEntries, res.Marked)
			require.Zero(t, res.Deleted)
			parts, segs := readSegments(t, s, 1)
			byPart := make([]transcript.SegmentInfo, len(parts))
			segByPart := make([]*segment.Segment, len(parts))
			for i, seg := range segs {
				byPart[seg.Meta.Group.Part], segByPart[seg.Meta.Group.Part] = parts[i], seg
			}
			tc.damage(t, b, byPart, segByPart)

			// Due now (the output settled), and no new compaction (a high
			// threshold): only the deletes are in question.
			settleOutputs(b)
			res, err = s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 1000,
				DeleteDelay: transcript.DeleteAtOnce, TargetSegmentSize: testTarget})
			if tc.wantErr {
				require.ErrorIs(t, err, transcript.ErrCompactInput)
			} else {
				require.NoError(t, err)
			}
			kept := 0
			for _, in := range inputs {
				if _, err := b.Stat(ctx, in.Key); err == nil {
					kept++
				}
			}
			if tc.anyDeleted {
				require.Positive(t, kept, "inputs the forged part lacks are kept")
			} else {
				require.Equal(t, groupEntries, kept, "no input is deleted on an incomplete group's word")
			}
			got, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, want, ids(got), "every entry is still read")
		})
	}
}

func TestIncompleteGroups_NamesMissingPart(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{})
	appendChain(t, s, ref, newWriter(t, "w"), "e", "", groupEntries)
	_, err := s.Compact(ctx, ref, groupOpts(4, time.Hour))
	require.NoError(t, err)
	parts, segs := readSegments(t, s, 1)
	require.Empty(t, transcript.IncompleteGroups(parts, segs), "a whole group")
	require.Empty(t, transcript.UnheldInputs(parts, segs))

	var gone int
	for i, seg := range segs {
		if seg.Meta.Group.Part == 2 {
			gone = i
		}
	}
	rest := append(append([]transcript.SegmentInfo{}, parts[:gone]...), parts[gone+1:]...)
	restSegs := append(append([]*segment.Segment{}, segs[:gone]...), segs[gone+1:]...)
	got := transcript.IncompleteGroups(rest, restSegs)
	require.Len(t, got, 1)
	require.Equal(t, []int{2}, got[0].Missing)
	require.Equal(t, segs[0].Meta.Group.ID, got[0].Group)
	require.Len(t, got[0].Present, len(parts)-1)
	require.Contains(t, got[0].Error(), "missing part(s) [2]")
}

// fullGets counts whole-object GETs; ranged reads (bucket.RangeReader) pass through
// uncounted.
type fullGets struct {
	*membucket.Bucket
	gets atomic.Int32
}

func (b *fullGets) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	b.gets.Add(1)
	return b.Bucket.Get(ctx, key)
}

// TestCompact_PlansFromMetadata: a run over a compacted session with nothing to
// merge reads the compacted segments' metadata frames only, never their entries.
func TestCompact_PlansFromMetadata(t *testing.T) {
	ctx := context.Background()
	b := &fullGets{Bucket: membucket.New()}
	s := newStore(t, b, transcript.Config{})
	want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", groupEntries)
	_, err := s.Compact(ctx, ref, groupOpts(4, transcript.DeleteAtOnce))
	require.NoError(t, err)
	appendChain(t, s, ref, newWriter(t, "w2"), "f", want[len(want)-1], 2)

	b.gets.Store(0)
	res, err := s.Compact(ctx, ref, groupOpts(4, transcript.DeleteAtOnce))
	require.NoError(t, err)
	require.Empty(t, res.Compactions)
	require.Zero(t, b.gets.Load(), "no compacted segment is fetched whole to plan")
}
