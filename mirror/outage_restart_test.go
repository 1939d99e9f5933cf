package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A runtime (SessionTree + Mirror with a small MaxPending) restarted during an
// outage: the restarted Mirror accepts turns while the bound has room, the
// turns past it are written locally and recorded as unsent (ErrUnsent), and
// once the store is back the next Flush hands them over without a restart.
// Every turn reaches the store once, the local files hold what the store
// holds, and no unsent file is left.
func TestMirror_SessionTreeRestartDuringOutage(t *testing.T) {
	const maxPending = 3
	fb := faultbucket.Wrap(membucket.New())
	store := newStore(t, fb, "")
	outbox, root := t.TempDir(), t.TempDir()
	ctx := ctxTimeout(t, 30*time.Second)
	who := sessiontree.Identity{Namespace: "tenant1"}
	tune := func(c *mirror.Config) { c.MaxPending = maxPending }
	turn := func(tr *sessiontree.Tree, n int) error {
		_, err := tr.AppendMessage(fmt.Appendf(nil, `{"role":"user","content":"question %d","timestamp":1}`, n))
		require.NoError(t, err)
		_, err = tr.AppendMessage(fmt.Appendf(nil, `{"role":"assistant","content":[{"type":"text","text":"answer %d"}],"provider":"p","model":"m","timestamp":2}`, n))
		require.NoError(t, err)
		return tr.Flush(ctx)
	}
	open := func(m *mirror.Mirror) *sessiontree.Tree {
		tr, _, err := sessiontree.Open(ctx, sessiontree.Config{Root: root, Uploader: m, Store: store}, who, "agent", "s", sessiontree.HeaderOptions{})
		require.NoError(t, err)
		return tr
	}
	stop := func(m *mirror.Mirror) { // the process ends with segments in the outbox
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_ = m.Close(short)
	}

	m := newMirror(t, store, outbox, tune)
	tr := open(m)
	n := 0
	for ; n < 8; n++ { // the store is up
		require.NoError(t, turn(tr, n))
		require.NoError(t, m.AwaitQuiescence(ctx))
	}
	fb.Hang(faultbucket.OpPut)
	require.NoError(t, turn(tr, n), "the outbox takes it")
	n++
	stop(m)

	m = newMirror(t, store, outbox, tune)
	tr = open(m)
	for range maxPending - 1 {
		require.NoError(t, turn(tr, n), "room under the bound after the restart")
		n++
	}
	for range 3 {
		require.ErrorIs(t, turn(tr, n), sessiontree.ErrUnsent, "past the bound")
		n++
	}
	require.FileExists(t, tr.UnsentPath())

	fb.Heal() // the store is back: no restart needed
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.NoError(t, turn(tr, n), "the unsent turns go with this one")
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.NoFileExists(t, tr.UnsentPath())

	want := []string{tr.Header().ID()}
	for _, e := range tr.Entries() {
		want = append(want, e.ID())
	}
	require.Len(t, want, 1+2*(n+1))
	requireStored(t, store, tr.Ref(), want)
	restored, _, err := sessiontree.Restore(ctx, sessiontree.Config{Root: t.TempDir(), Store: store}, who, "agent", "s")
	require.NoError(t, err)
	raws := func(tr *sessiontree.Tree) map[string]string {
		out := map[string]string{}
		for _, e := range tr.Entries() {
			out[e.ID()] = string(e.Raw())
		}
		return out
	}
	reloaded, _, err := sessiontree.Open(ctx, sessiontree.Config{Root: root}, who, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.Equal(t, raws(restored), raws(reloaded), "the local files hold what the store holds")
}
