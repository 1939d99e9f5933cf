package mirror_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestMirror_RestartCountsOnlyUnconfirmed restarts a Mirror during an outage
// after many segments were uploaded: the restarted Mirror must count against
// MaxPending only the segments the store had not confirmed, not every record of
// the journal files it replays, so that it accepts what the bound leaves room
// for, refuses the rest, and drains everything once the store is back.
func TestMirror_RestartCountsOnlyUnconfirmed(t *testing.T) {
	const maxPending = 3
	mem := membucket.New()
	fb := faultbucket.Wrap(mem)
	store := newStore(t, fb, "")
	dir := t.TempDir()
	s := newSession("a", "s")
	ctx := ctxTimeout(t, 20*time.Second)
	tune := func(c *mirror.Config) { c.MaxPending = maxPending }

	m := newMirror(t, store, dir, tune)
	for range 12 { // confirmed one at a time: never more than one pending
		require.NoError(t, m.Upload(ctx, s.batch(2)))
		require.NoError(t, m.AwaitQuiescence(ctx))
	}
	fb.Hang(faultbucket.OpPut) // the outage
	require.NoError(t, m.Upload(ctx, s.batch(2)))
	require.Equal(t, 1, m.Status().Pending)
	closeCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	require.Error(t, m.Close(closeCtx), "the unconfirmed segment stays in the outbox")
	cancel()

	m = newMirror(t, store, dir, tune) // restarted during the outage
	require.Equal(t, 1, m.Status().Pending, "only the unconfirmed segment is pending again")
	for range maxPending - 1 {
		require.NoError(t, m.Upload(ctx, s.batch(2)), "room left under the bound")
	}
	require.ErrorIs(t, m.Upload(ctx, s.batch(2)), mirror.ErrBackpressure, "the bound is the bound")
	s.ids = s.ids[:len(s.ids)-2] // the refused batch

	fb.Heal() // the store is back: everything drains, new batches are accepted
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.NoError(t, m.Upload(ctx, s.batch(2)))
	require.NoError(t, m.Close(ctx))
	requireStored(t, store, s.ref, s.ids)
	require.Empty(t, outboxFiles(t, dir, "journal"), "nothing left in the outbox")
}
