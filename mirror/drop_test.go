package mirror_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// stubborn holds every PUT until release is closed, whatever its context
// says, and then stores it: a PUT that the store completes though its
// caller gave up.
type stubborn struct {
	bucket.Bucket
	started chan struct{} // receives once per PUT begun
	release chan struct{}
}

func (b *stubborn) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	b.started <- struct{}{}
	<-b.release
	return b.Bucket.Put(context.WithoutCancel(ctx), key, r, size, opts)
}

// TestMirror_DropQueued: DropQueued takes back a session's segments the store
// does not have, journal records and files under pending/ alike, the one in
// flight too (its PUT is cancelled), and no restart brings them back; other
// sessions' segments are untouched. A segment whose PUT succeeds all the same
// is stored and not counted. A follower refilling a session its store lost
// re-sends them after its header, in the file's order.
func TestMirror_DropQueued(t *testing.T) {
	one := func(c *mirror.Config) { c.Workers = 1 }
	t.Run("journal", func(t *testing.T) {
		h := newHungMirror(t, one)
		other := newSession("a", "other")
		require.NoError(t, h.m.Upload(h.ctx, h.s.batch(2)))
		require.Eventually(t, func() bool { return h.fb.Counts().Put > 0 }, 5*time.Second, time.Millisecond, "the first segment in flight")
		for range 3 {
			require.NoError(t, h.m.Upload(h.ctx, h.s.batch(1)))
		}
		require.NoError(t, h.m.Upload(h.ctx, other.batch(2)))
		require.Equal(t, 5, h.m.Status().Pending)

		n, err := h.m.DropQueued(h.ctx, h.s.ref)
		require.NoError(t, err)
		require.Equal(t, 4, n, "three queued and the one in flight")
		require.Equal(t, 1, h.m.Status().Pending, "the other session's")
		pending, err := h.m.PendingEntries(h.ctx, h.s.ref)
		require.NoError(t, err)
		require.Empty(t, pending)

		h.fb.Heal()
		require.NoError(t, h.m.AwaitQuiescence(h.ctx))
		segs, err := h.store.ListSegments(h.ctx, h.s.ref)
		require.NoError(t, err)
		require.Empty(t, segs)
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
		writePending(t, store, dir, s.batch(1), s.batch(1), s.batch(1))
		m := newMirror(t, store, dir, one)
		ctx := ctxTimeout(t, 10*time.Second)
		require.Eventually(t, func() bool { return fb.Counts().Put > 0 }, 5*time.Second, time.Millisecond, "the first segment in flight")
		n, err := m.DropQueued(ctx, s.ref)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		require.Empty(t, outboxFiles(t, dir, "pending"))
		fb.Heal()
		require.NoError(t, m.AwaitQuiescence(ctx))
		require.NoError(t, m.Close(ctx))
		require.Zero(t, newMirror(t, store, dir, one).Status().Pending)
	})
	t.Run("the PUT in flight succeeds", func(t *testing.T) {
		b := &stubborn{Bucket: membucket.New(), started: make(chan struct{}, 8), release: make(chan struct{})}
		store := newStore(t, b, "")
		m := newMirror(t, store, "", one)
		ctx := ctxTimeout(t, 10*time.Second)
		s := newSession("a", "s")
		require.NoError(t, m.Upload(ctx, s.batch(2)))
		<-b.started
		require.NoError(t, m.Upload(ctx, s.batch(1)))
		done := make(chan int, 1)
		go func() {
			n, err := m.DropQueued(ctx, s.ref)
			if err != nil {
				n = -1
			}
			done <- n
		}()
		require.Eventually(t, func() bool { return m.Status().Pending == 1 }, 5*time.Second, time.Millisecond, "the queued one taken back")
		close(b.release)
		require.Equal(t, 1, <-done, "only the queued one")
		require.NoError(t, m.AwaitQuiescence(ctx))
		requireStored(t, store, s.ref, s.ids[:2])
		require.NoError(t, m.Close(ctx))
	})
}
