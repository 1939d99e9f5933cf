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
// drops its output only if it looked within outputSettle of starting the merge;
// later, another run may have deleted them on account of this very output.
func TestDropIfInputsGone_OnlyWithinTheSettle(t *testing.T) {
	cases := []struct {
		name    string
		started time.Duration // before now
		present bool          // an input is still there
		dropped bool
	}{
		{name: "inputs gone at once", started: time.Second, dropped: true},
		{name: "inputs gone after the settle", started: outputSettle + time.Second},
		{name: "an input there", started: time.Second, present: true},
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
				time.Now().Add(-tc.started))
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
