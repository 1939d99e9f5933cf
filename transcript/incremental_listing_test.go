package transcript_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// testClock is a settable clock for one test.
type testClock struct{ t time.Time }

func (c *testClock) Now() time.Time { return c.t }

// stepClock returns a Now that moves d forward on every call, from start.
func stepClock(start time.Time, d time.Duration) func() time.Time {
	next := start
	return func() time.Time {
		t := next
		next = next.Add(d)
		return t
	}
}

// A segment whose key lies below an incremental listing's start (a writer whose
// clock is slow and that had not read the session, an outbox that waited) is
// found by the next full listing, after Reconcile.Every incremental ones; one whose
// key is ahead is found at once.
func TestStore_ReadNew_LateSegmentFoundAtReconciliation(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const every = 3
	tests := []struct {
		name string
		skew time.Duration
		// wantAt is the incremental sync (1-based) that delivers the late segment;
		// every+1 is the full listing after them.
		wantAt int
	}{
		{name: "an hour slow", skew: -time.Hour, wantAt: every + 1},
		{name: "a day slow", skew: -24 * time.Hour, wantAt: every + 1},
		{name: "within the margin", skew: -time.Minute, wantAt: 1},
		{name: "an hour fast", skew: time.Hour, wantAt: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := membucket.New()
			policy := transcript.ReconcilePolicy{Every: every, After: time.Hour}
			reader := newStore(t, b, transcript.Config{Now: func() time.Time { return now }, Reconcile: policy})
			writer := newStore(t, b, transcript.Config{Now: func() time.Time { return now }})
			ids := appendChain(t, writer, ref, newWriter(t, "w"), "a", "", 2)
			inc, err := reader.ReadNew(ctx, ref, transcript.SegmentSet{})
			require.NoError(t, err)
			require.True(t, inc.Full, "a set without a full listing behind it lists everything")
			have := inc.Have

			skewed := newStore(t, b, transcript.Config{Now: func() time.Time { return now.Add(tt.skew) }})
			late := appendChain(t, skewed, ref, newWriter(t, "skewed"), "late", ids[1], 1)
			for i := 1; i <= every+1; i++ {
				inc, err := reader.ReadNew(ctx, ref, have)
				require.NoError(t, err)
				require.Equal(t, i == every+1, inc.Full, "sync %d", i)
				if i == tt.wantAt {
					require.Equal(t, late, entryIDs(inc.Entries), "sync %d", i)
				} else {
					require.Empty(t, inc.Entries, "sync %d", i)
				}
				have = inc.Have
			}
			require.Equal(t, 3, have.Len())
		})
	}
}

// Reconcile.After bounds how long a late segment waits when a reader syncs rarely,
// and a negative Reconcile.Every lists the whole session every time.
func TestStore_ReadNew_ReconcilePolicy(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		policy transcript.ReconcilePolicy
		step   time.Duration // the reader's clock between syncs
		want   []bool        // Full of syncs 1..n
		asked  int           // sync (1..n) before which the reader calls Reconcile; 0: none
	}{
		{name: "every", policy: transcript.ReconcilePolicy{Every: 2, After: time.Hour}, want: []bool{true, false, false, true, false}},
		{name: "after", policy: transcript.ReconcilePolicy{Every: 100, After: 10 * time.Second}, step: 4 * time.Second,
			want: []bool{true, false, false, true, false, false, true}},
		{name: "always", policy: transcript.ReconcilePolicy{Every: -1}, want: []bool{true, true, true}},
		{name: "defaults", step: 2 * time.Minute, want: []bool{true, false, false, false, false, true, false}},
		{name: "asked", policy: transcript.ReconcilePolicy{Every: 100, After: time.Hour}, asked: 3,
			want: []bool{true, false, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := membucket.New()
			clock := &testClock{t: start}
			reader := newStore(t, b, transcript.Config{Now: clock.Now, Reconcile: tt.policy})
			appendChain(t, newStore(t, b, transcript.Config{}), ref, newWriter(t, "w"), "a", "", 1)
			have := transcript.SegmentSet{}
			var got []bool
			for i := range tt.want {
				if i+1 == tt.asked {
					have = have.Reconcile()
				}
				inc, err := reader.ReadNew(ctx, ref, have)
				require.NoError(t, err)
				got, have = append(got, inc.Full), inc.Have
				clock.t = clock.t.Add(tt.step)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// A turn's sync costs the same requests and lists the same number of keys
// whatever the session's length: one LIST of the newest keys and one GET of the
// new segment.
func TestStore_ReadNew_TurnCostConstantInLength(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	const turns = 5
	type cost struct {
		counts faultbucket.Counts
		listed int
	}
	perTurn := map[int][]cost{}
	for _, n := range []int{10, 300} {
		b := faultbucket.Wrap(membucket.New())
		// The session's history was written a turn a minute, as a runtime does; the
		// turns measured follow at the same pace.
		wall := stepClock(start, time.Minute)
		writer := newStore(t, b, transcript.Config{Now: wall})
		r := ref
		r.SessionID = fmt.Sprintf("n%d", n)
		w := newWriter(t, "w")
		ids := appendChain(t, writer, r, w, "h", "", n)
		// The reader syncs often (a Watch, a burst of turns): its own clock hardly
		// moves, so only Reconcile.Every decides its full listings.
		reader := newStore(t, b, transcript.Config{Now: func() time.Time { return start }})
		inc, err := reader.ReadNew(ctx, r, transcript.SegmentSet{})
		require.NoError(t, err)
		require.Len(t, inc.Entries, n)
		have, parent := inc.Have, ids[n-1]
		for i := range turns {
			parent = appendChain(t, writer, r, w, fmt.Sprintf("t%d", i), parent, 1)[0]
			b.ResetCounts()
			inc, err := reader.ReadNew(ctx, r, have)
			require.NoError(t, err)
			require.False(t, inc.Full)
			require.Equal(t, []string{parent}, entryIDs(inc.Entries))
			perTurn[n] = append(perTurn[n], cost{counts: b.Counts(), listed: inc.Listed})
			have = inc.Have
		}
		require.Equal(t, n+turns, have.Len())
	}
	require.Equal(t, perTurn[10], perTurn[300])
	for _, c := range perTurn[10] {
		require.Equal(t, int64(1), c.counts.List)
		require.Equal(t, int64(1), c.counts.Get)
		require.Equal(t, int64(2), c.counts.Requests())
	}
}

// A late segment that a compaction merged and deleted before any full listing saw
// it reaches the reader at its next sync, through the compacted segment, which
// every listing shows.
func TestStore_ReadNew_LateInputCompactedAway(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	b := membucket.New()
	reader := newStore(t, b, transcript.Config{Now: func() time.Time { return now },
		Reconcile: transcript.ReconcilePolicy{Every: 100, After: time.Hour}})
	writer := newStore(t, b, transcript.Config{Now: func() time.Time { return now }})
	ids := appendChain(t, writer, ref, newWriter(t, "w"), "a", "", 3)
	inc, err := reader.ReadNew(ctx, ref, transcript.SegmentSet{})
	require.NoError(t, err)
	have := inc.Have

	slow := newStore(t, b, transcript.Config{Now: func() time.Time { return now.Add(-time.Hour) }})
	late := appendChain(t, slow, ref, newWriter(t, "slow"), "late", ids[2], 1)
	inc, err = reader.ReadNew(ctx, ref, have)
	require.NoError(t, err)
	require.False(t, inc.Full)
	require.Empty(t, inc.Entries, "below the incremental listing's start")
	have = inc.Have

	_, err = writer.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	inc, err = reader.ReadNew(ctx, ref, have)
	require.NoError(t, err)
	require.False(t, inc.Full)
	require.Contains(t, entryIDs(inc.Entries), late[0])
	have = inc.Have

	// The next full listing drops the deleted inputs and finds nothing more.
	all, err := reader.ListSegments(ctx, ref)
	require.NoError(t, err)
	inc, err = reader.ReadNew(ctx, ref, transcript.NewSegmentSet(have.Keys()...))
	require.NoError(t, err)
	require.True(t, inc.Full)
	require.Empty(t, inc.Entries)
	require.Equal(t, len(all), inc.Have.Len())
}
