package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// requireLeanAgrees reads ref with ReadAll and ReadLean from s and requires the
// same result: entries (with their segment, position, origin and time), losers,
// conflicts, segments, corrupt segments, cycles and invalid entries. ReadAll
// through s.PackedReads() must return what ReadAll through s does.
func requireLeanAgrees(t *testing.T, s *transcript.Store, msg string) {
	t.Helper()
	ctx := context.Background()
	want, err := s.ReadAll(ctx, ref)
	require.NoError(t, err, msg)
	packed, err := s.PackedReads().ReadAll(ctx, ref)
	require.NoError(t, err, msg)
	require.Equal(t, want, packed, "%s: ReadAll through PackedReads", msg)
	got, err := s.ReadLean(ctx, ref)
	require.NoError(t, err, msg)
	require.Equal(t, len(want.Entries), got.Len(), msg)
	var jsonl bytes.Buffer
	for i, e := range want.Entries {
		require.Equal(t, e, got.Entry(i), "%s: entry %d", msg, i)
		require.Equal(t, e.ID, got.ID(i), msg)
		j, ok := got.Index(e.ID)
		require.True(t, ok, msg)
		require.Equal(t, i, j, msg)
		if p, ok := got.Parent(i); ok {
			require.Equal(t, e.ParentID, got.ID(p), msg)
		}
		jsonl.Write(e.Raw)
		jsonl.WriteByte('\n')
	}
	_, ok := got.Index("no such entry")
	require.False(t, ok, msg)
	var out bytes.Buffer
	require.NoError(t, got.WriteJSONL(&out))
	require.Equal(t, jsonl.String(), out.String(), msg)
	require.Equal(t, want.Losers, got.Losers, msg)
	require.Equal(t, want.Conflicts, got.Conflicts, msg)
	require.Equal(t, want.Segments, got.Segments, msg)
	require.Equal(t, want.Corrupt, got.Corrupt, msg)
	require.Equal(t, want.Cycles, got.Cycles, msg)
	require.Equal(t, want.Invalid, got.Invalid, msg)
}

// TestReadLean_AgreesWithReadAll: on random histories of several replicas with
// skewed clocks, branches, conflicts and leaf entries, compacted at random points
// (inputs deleted or left superseded), with parent cycles, self-parents,
// dangling parents and a corrupt segment added, ReadLean gives what ReadAll gives.
func TestReadLean_AgreesWithReadAll(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			segs := genHistory(t, rng)
			for _, name := range []string{"none", "random points", "twice"} {
				b := membucket.New()
				clock := transcript.NewClock(func() time.Time { return time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC) })
				s, err := transcript.New(transcript.Config{Bucket: b, Clock: clock, SkipCorrupt: true})
				require.NoError(t, err)
				w, err := transcript.NewWriter("compactor")
				require.NoError(t, err)
				for i, sg := range segs {
					require.NoError(t, s.PutSegment(ctx, sg.key, sg.data))
					if ok, opts := compactSchedules()[name](i, len(segs), rng); ok {
						opts.Writer = w
						_, err := s.Compact(ctx, ref, opts)
						require.NoError(t, err)
					}
				}
				requireLeanAgrees(t, s, name)

				// Odd trees: a two-entry cycle, a self-parent, a dangling parent.
				odd := [][]byte{entry("cyc-a", "cyc-b"), entry("cyc-b", "cyc-a"), entry("self", "self"), entry("orphan", "gone")}
				rng.Shuffle(len(odd), func(i, j int) { odd[i], odd[j] = odd[j], odd[i] })
				_, err = s.AppendSegment(ctx, ref, odd, w)
				require.NoError(t, err)
				requireLeanAgrees(t, s, name+" with odd trees")

				// A corrupt segment, skipped by both.
				obj, err := s.PrepareSegment(ref, [][]byte{entry("lost", "")}, w)
				require.NoError(t, err)
				data := bytes.Clone(obj.Data)
				data[len(data)-3] ^= 0xff
				require.NoError(t, b.Put(ctx, obj.Info.Key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
				requireLeanAgrees(t, s, name+" with a corrupt segment")
				_ = s.Close()
			}
		})
	}
}
