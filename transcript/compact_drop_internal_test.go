package transcript

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestDropIfInputsGone_OnlyWithinTheSettle: a run that finds its inputs gone
// drops its output only if it looked within outputSettle of its last PUT;
// later, another run may have deleted them on account of this very output.
func TestDropIfInputsGone_OnlyWithinTheSettle(t *testing.T) {
	cases := []struct {
		name    string
		lastPut time.Duration // before now
		present bool          // an input is still there
		dropped bool
	}{
		{name: "inputs gone at once", lastPut: time.Second, dropped: true},
		{name: "inputs gone after the settle", lastPut: outputSettle + time.Second},
		{name: "an input there", lastPut: time.Second, present: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := membucket.New()
			s, err := New(Config{Bucket: b})
			require.NoError(t, err)
			defer s.Close()
			put := func(key string) {
				require.NoError(t, b.Put(ctx, key, bytes.NewReader([]byte("x")), 1, bucket.PutOptions{}))
			}
			out := SegmentInfo{Key: "acme/coder/s1/L1/out.seg"}
			put(out.Key)
			live := []SegmentInfo{{Key: "acme/coder/s1/L0/a.seg"}, {Key: "acme/coder/s1/L0/b.seg"}}
			if tc.present {
				put(live[1].Key)
			}
			gone, err := s.dropIfInputsGone(ctx, live, Compaction{Output: out, Outputs: []SegmentInfo{out}},
				time.Now().Add(-tc.lastPut))
			require.NoError(t, err)
			require.Equal(t, tc.dropped, gone)
			_, err = b.Stat(ctx, out.Key)
			if tc.dropped {
				require.True(t, errors.Is(err, bucket.ErrNotFound), "output deleted: %v", err)
			} else {
				require.NoError(t, err, "output kept")
			}
		})
	}
}

// TestUnsettled_EveryPartOfAGroup: another run's output settles when every part
// of its group is outputSettle old: its writer counts from its last part's PUT.
func TestUnsettled_EveryPartOfAGroup(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	old, young := now.Add(-2*outputSettle), now.Add(-outputSettle/2)
	g := &segGroup{parts: []SegmentInfo{{Key: "p0"}, {Key: "p1"}}}
	cases := []struct {
		name   string
		stored map[string]time.Time
		group  bool
		want   bool
	}{
		{name: "one old segment", stored: map[string]time.Time{"p0": old}},
		{name: "one young segment", stored: map[string]time.Time{"p0": young}, want: true},
		{name: "unlisted", stored: map[string]time.Time{}, want: true},
		{name: "group, every part old", stored: map[string]time.Time{"p0": old, "p1": old}, group: true},
		{name: "group, last part young", stored: map[string]time.Time{"p0": old, "p1": young}, group: true, want: true},
		{name: "group, a part unlisted", stored: map[string]time.Time{"p0": old}, group: true, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &compactState{settle: true, stored: tc.stored, groupOf: map[string]*segGroup{}}
			if tc.group {
				st.groupOf["p0"], st.groupOf["p1"] = g, g
			}
			require.Equal(t, tc.want, st.unsettled("p0", now))
		})
	}
	require.False(t, (&compactState{}).unsettled("p0", now), "a strict session's outputs need not settle")
}
