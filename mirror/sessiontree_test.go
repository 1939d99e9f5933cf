package mirror_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// Many SessionTrees share one Mirror, flush concurrently while the store fails now
// and then, and every flushed entry (with the session header) reaches the store; a
// tree restored from the store alone has the same entries.
func TestMirror_SessionTrees(t *testing.T) {
	fb := faultbucket.Wrap(membucket.New())
	store := newStore(t, fb, "")
	m := newMirror(t, store, "", func(c *mirror.Config) { c.Workers = 2 })
	ctx := ctxTimeout(t, 30*time.Second)
	cfg := sessiontree.Config{Root: t.TempDir(), Uploader: m, Store: store}
	who := sessiontree.Identity{Namespace: "tenant1"}

	fb.FailNext(faultbucket.OpPut, 3, nil)
	trees := make([]*sessiontree.Tree, 4)
	var wg sync.WaitGroup
	for i := range trees {
		tr, err := sessiontree.New(cfg, who, "agent", fmt.Sprintf("s%d", i), sessiontree.HeaderOptions{})
		require.NoError(t, err)
		trees[i] = tr
		wg.Go(func() {
			for turn := range 10 {
				_, err := tr.AppendMessage(fmt.Appendf(nil, `{"role":"user","content":"question %d","timestamp":1}`, turn))
				require.NoError(t, err)
				_, err = tr.AppendMessage(fmt.Appendf(nil, `{"role":"assistant","content":[{"type":"text","text":"answer %d"}],"provider":"p","model":"m","timestamp":2}`, turn))
				require.NoError(t, err)
				require.NoError(t, tr.Flush(ctx))
			}
		})
	}
	wg.Wait()
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.Equal(t, uint64(3), m.Status().Retries)

	for _, tr := range trees {
		want := []string{tr.Header().ID()}
		for _, e := range tr.Entries() {
			want = append(want, e.ID())
		}
		requireStored(t, store, tr.Ref(), want)

		restored, _, err := sessiontree.Restore(ctx, sessiontree.Config{Root: t.TempDir(), Store: store}, who, "agent", tr.Ref().SessionID)
		require.NoError(t, err)
		require.Equal(t, tr.Len(), restored.Len())
	}
}

// The legacy full-file mirror uploads the tree's whole files.
func TestLegacy_SessionTree(t *testing.T) {
	mb := membucket.New()
	store := newStore(t, mb, "p")
	r := &mirror.Legacy{Bucket: mb, Prefix: "p/legacy"}
	ctx := ctxTimeout(t, 10*time.Second)
	tr, err := sessiontree.New(sessiontree.Config{Root: t.TempDir(), Uploader: r}, sessiontree.Identity{}, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	for turn := range 3 {
		_, err := tr.AppendMessage(fmt.Appendf(nil, `{"role":"user","content":"q%d","timestamp":1}`, turn))
		require.NoError(t, err)
		require.NoError(t, tr.Flush(ctx))
	}
	require.NoError(t, r.Close(ctx))
	ck, lk := mirror.LegacyKeys("p/legacy", tr.Ref())
	for key, path := range map[string]string{ck: tr.ContextPath(), lk: tr.LogPath()} {
		local, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(local), getObject(t, mb, key))
	}
	_, err = store.ReadAll(ctx, transcript.TranscriptRef{AgentID: "agent", SessionID: "s"})
	require.ErrorIs(t, err, bucket.ErrNotFound, "the legacy mirror writes no segments")
}
