package mirror_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/sessiontree"
)

// A batch too large for one segment becomes several; when the bounds leave
// room for some of them only, Upload refuses the whole batch and accepts none:
// the caller hands all of it over again, and a segment accepted before the
// refusal would store its entries twice.
func TestMirror_BackpressureRefusesWholeBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("encodes a batch of more than one segment")
	}
	h := newHungMirror(t, func(c *mirror.Config) { c.MaxPending = 2 })
	fb, store, m, s := h.fb, h.store, h.m, h.s
	ctx := ctxTimeout(t, 2*time.Minute) // encoding 64 MiB is slow under the race detector
	require.NoError(t, m.Upload(ctx, s.batch(1)))

	big := sessiontree.Batch{Ref: s.ref}
	text := strings.Repeat("x", 1<<20)
	for size := 0; size <= segment.DefaultTargetSegmentSize; size += len(text) {
		s.n++
		id := fmt.Sprintf("%s-%05d", s.ref.SessionID, s.n)
		big.Entries = append(big.Entries, entry(id, s.last, s.n, text))
		s.last = id
		s.ids = append(s.ids, id)
	}
	require.ErrorIs(t, m.Upload(ctx, big), mirror.ErrBackpressure)
	require.Zero(t, mirror.JournalArriving(m), "a refused batch of several segments announces no append")
	require.Equal(t, 1, m.Status().Pending, "no segment of the refused batch is pending")

	fb.Heal()
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.NoError(t, m.Upload(ctx, big), "handed over again")
	require.Zero(t, mirror.JournalArriving(m), "each segment appended counts off its announcement")
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.EqualValues(t, 3, m.Status().Uploaded, "the first batch, then the large one as two segments")
	segs, err := store.ListSegments(ctx, s.ref)
	require.NoError(t, err)
	require.Len(t, segs, 3, "no segment stored twice")
}
