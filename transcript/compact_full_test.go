package transcript_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// spreadOverLevels appends and compacts ref until it holds one live segment on
// each of levels 0, 1 and 2 (what merging level by level with MinSegments 2 leaves),
// and returns the ids appended.
func spreadOverLevels(t *testing.T, s *transcript.Store, w *transcript.Writer) []string {
	t.Helper()
	ctx := context.Background()
	byLevel := transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce}
	var want []string
	parent := ""
	for i, n := range []int{2, 2, 2, 1} {
		got := appendChain(t, s, ref, w, fmt.Sprintf("r%d", i), parent, n)
		want, parent = append(want, got...), got[len(got)-1]
		if i < 3 {
			_, err := s.Compact(ctx, ref, byLevel)
			require.NoError(t, err)
		}
	}
	require.Equal(t, map[int]int{0: 1, 1: 1, 2: 1}, levels(t, s, ref))
	return want
}

// A full compaction merges the live segments of every level into one segment of
// the level above the highest, keeping every entry byte for byte and in order;
// a dry run changes nothing, and a session of one segment (or one group) is left
// as it is.
func TestCompact_Full(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, newBucket(t), transcript.Config{Prefix: "p"})
			want := spreadOverLevels(t, s, newWriter(t, "replica-a"))
			before, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)

			full := transcript.CompactOptions{Full: true, DeleteDelay: transcript.DeleteAtOnce}
			dry := full
			dry.DryRun = true
			res, err := s.Compact(ctx, ref, dry)
			require.NoError(t, err)
			require.Len(t, res.Compactions, 1)
			require.Equal(t, 2, res.Compactions[0].Level, "the highest level merged")
			require.Equal(t, map[int]int{0: 1, 1: 1, 2: 1}, levels(t, s, ref), "a dry run writes nothing")

			res, err = s.Compact(ctx, ref, full)
			require.NoError(t, err)
			require.Len(t, res.Compactions, 1)
			require.Equal(t, 3, res.SegmentsIn())
			require.Equal(t, len(want), res.Compactions[0].Entries)
			require.Equal(t, map[int]int{3: 1}, levels(t, s, ref), "one segment, the inputs deleted")
			after, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, want, ids(after))
			require.Equal(t, before.Raw(), after.Raw(), "every entry byte for byte, in order")

			again, err := s.Compact(ctx, ref, full)
			require.NoError(t, err)
			require.Empty(t, again.Compactions, "one segment: nothing to merge")
		})
	}
}

// A full compaction whose output is above the target size writes a group of
// parts, which counts as one unit afterwards: the next full compaction leaves it.
func TestCompact_FullGroup(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{Prefix: "p"})
	want := spreadOverLevels(t, s, newWriter(t, "replica-a"))
	full := transcript.CompactOptions{Full: true, DeleteDelay: transcript.DeleteAtOnce, TargetSegmentSize: 300}
	res, err := s.Compact(ctx, ref, full)
	require.NoError(t, err)
	require.Len(t, res.Compactions, 1)
	require.Greater(t, len(res.Compactions[0].Outputs), 1, "a group of parts")
	require.Equal(t, map[int]int{3: len(res.Compactions[0].Outputs)}, levels(t, s, ref))
	again, err := s.Compact(ctx, ref, full)
	require.NoError(t, err)
	require.Empty(t, again.Compactions, "one group: nothing to merge")
	after, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want, ids(after))
}

// A full compaction of a strict session commits one segment in the head, in
// place of every segment it named, and the committed order stays.
func TestCompact_FullStrict(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, newBucket(t), transcript.Config{})
			w := newWriter(t, "replica-a")
			_, h, err := s.CreateSession(ctx, strictRef, [][]byte{header}, w, transcript.CreateOptions{Strict: true})
			require.NoError(t, err)
			byLevel := transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce}
			var want []string
			parent := ""
			for i := range 7 {
				id := fmt.Sprintf("e%d", i)
				_, h, err = s.CommitSegment(ctx, strictRef, h, [][]byte{entryLine(id, parent)}, w, id, nil)
				require.NoError(t, err)
				want, parent = append(want, id), id
				if i%2 == 1 {
					_, err = s.Compact(ctx, strictRef, byLevel)
					require.NoError(t, err)
					h, err = s.ReadHead(ctx, strictRef)
					require.NoError(t, err)
				}
			}
			require.Greater(t, len(h.Segments), 1, "merging level by level leaves several segments")
			before, err := s.ReadAll(ctx, strictRef)
			require.NoError(t, err)

			_, err = s.Compact(ctx, strictRef, transcript.CompactOptions{Full: true, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			h2, err := s.ReadHead(ctx, strictRef)
			require.NoError(t, err)
			require.Len(t, h2.Segments, 1, "the head names one segment")
			require.Equal(t, h.Entry, h2.Entry)
			require.Equal(t, h.Version, h2.Version, "a compaction is not a commit")
			after, err := s.ReadAll(ctx, strictRef)
			require.NoError(t, err)
			require.Equal(t, before.Raw(), after.Raw())
			require.Equal(t, want, ids(after)[1:], "the entries after the header, in commit order")
		})
	}
}
