package mirror_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestMirror_DropQueued: DropQueued takes back a session's segments that wait
// for a worker, journal records and files under pending/ alike, and no
// restart brings them back; the segment in flight lands, and other
// sessions' segments are untouched. A follower refilling a session
// its store lost re-sends them after its header, in the file's order.
func TestMirror_DropQueued(t *testing.T) {
	one := func(c *mirror.Config) { c.Workers = 1 }
	t.Run("journal", func(t *testing.T) {
		h := newHungMirror(t, one)
		other := newSession("a", "other")
		first := h.s.batch(2)
		require.NoError(t, h.m.Upload(h.ctx, first))
		require.Eventually(t, func() bool { return h.fb.Counts().Put > 0 }, 5*time.Second, time.Millisecond, "the first segment in flight")
		for range 3 {
			require.NoError(t, h.m.Upload(h.ctx, h.s.batch(1)))
		}
		require.NoError(t, h.m.Upload(h.ctx, other.batch(2)))
		require.Equal(t, 5, h.m.Status().Pending)

		require.Equal(t, 3, h.m.DropQueued(h.s.ref))
		require.Equal(t, 2, h.m.Status().Pending, "the one in flight and the other session's")
		require.Zero(t, h.m.DropQueued(h.s.ref))

		h.fb.Heal()
		require.NoError(t, h.m.AwaitQuiescence(h.ctx))
		requireStored(t, h.store, h.s.ref, h.s.ids[:2])
		requireStored(t, h.store, other.ref, other.ids)
		require.NoError(t, h.m.Close(h.ctx))
		m := newMirror(t, h.store, h.dir, one)
		require.Zero(t, m.Status().Pending, "a restart replays no segment taken back")
		require.NoError(t, m.Close(h.ctx))
	})
	t.Run("pending files", func(t *testing.T) {
		fb := faultbucket.Wrap(membucket.New())
		fb.Hang(faultbucket.OpPut)
		store := newStore(t, fb, "")
		dir := t.TempDir()
		s := newSession("a", "s")
		keys := writePending(t, store, dir, s.batch(1), s.batch(1), s.batch(1))
		m := newMirror(t, store, dir, one)
		ctx := ctxTimeout(t, 10*time.Second)
		require.Eventually(t, func() bool { return fb.Counts().Put > 0 }, 5*time.Second, time.Millisecond, "the first segment in flight")
		require.Equal(t, 2, m.DropQueued(s.ref))
		require.Len(t, outboxFiles(t, dir, "pending"), 1, "the one in flight")
		fb.Heal()
		require.NoError(t, m.AwaitQuiescence(ctx))
		require.Empty(t, outboxFiles(t, dir, "pending"))
		requireStored(t, store, s.ref, s.ids[:1])
		segs, err := store.ListSegments(ctx, s.ref)
		require.NoError(t, err)
		require.Len(t, segs, 1)
		require.Equal(t, keys[0], segs[0].Key)
		require.NoError(t, m.Close(ctx))
	})
}
