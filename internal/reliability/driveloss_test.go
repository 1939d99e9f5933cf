package reliability_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// TestDriveLoss: a MinIO of this test runs in erasure-coded
// mode on four drive directories; while writers flush and readers read, the
// contents of one drive directory are wiped. Every session still reads, and
// nothing flushed before, during or after the loss is missing.
func TestDriveLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a MinIO of its own")
	}
	rng := seeded(t)
	base := t.TempDir()
	srv := startMinIO(t, filepath.Join(base, "d{1...4}"))
	name := randomName("rel-drive-")
	srv.srv.open(t, name, "", true, 10*time.Second, 0)
	store := newStore(t, srv.srv.open(t, name, "", false, 5*time.Second, 3), "drive")
	ctx := ctxTimeout(t, 2*time.Minute)

	w, err := transcript.NewWriter("drive")
	require.NoError(t, err)
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: t.TempDir(),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	require.NoError(t, err)
	defer m.Close(ctx)
	cfg := sessiontree.Config{Root: t.TempDir(), Uploader: m, NoSync: true}
	const sessions = 6
	var trees []*sessiontree.Tree
	for i := range sessions {
		tr, err := sessiontree.New(cfg, sessiontree.Identity{}, "drive", fmt.Sprintf("s%d", i), sessiontree.HeaderOptions{})
		require.NoError(t, err)
		trees = append(trees, tr)
	}
	acked := map[transcript.TranscriptRef][]string{}
	var mu sync.Mutex
	write := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			tr := trees[rng.IntN(sessions)]
			e, err := tr.AppendMessage(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"turn %d"}`, tr.Len())))
			require.NoError(t, err)
			require.NoError(t, tr.Flush(ctx))
			mu.Lock()
			acked[tr.Ref()] = append(acked[tr.Ref()], e.ID())
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}
	// A reader runs throughout; a failed read is counted, a read must never be
	// inconsistent.
	bg := newLoops()
	var reads readStats
	refs := make([]transcript.TranscriptRef, sessions)
	for i, tr := range trees {
		refs[i] = tr.Ref()
	}
	bg.every(20*time.Millisecond, checkedReader(t, ctx, store, refs, 5*time.Second, &reads))

	write(2 * time.Second)
	require.NoError(t, m.AwaitQuiescence(ctx))
	// Lose drive 2: everything on it is gone while the server runs.
	lost := filepath.Join(base, "d2")
	ents, err := os.ReadDir(lost)
	require.NoError(t, err)
	require.NotEmpty(t, ents, "the drive held data")
	for _, e := range ents {
		require.NoError(t, os.RemoveAll(filepath.Join(lost, e.Name())))
	}
	write(3 * time.Second)
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.NoError(t, bg.halt())

	total := 0
	for ref, ids := range acked {
		res, err := store.ReadAll(ctx, ref)
		require.NoError(t, err, "session %s reads after the drive loss\n%s", ref, srv.logTail())
		require.NoError(t, readConsistent(res, nil))
		got := entryIDs(res)
		for _, id := range ids {
			require.True(t, got[id], "entry %s of %s lost with the drive", id, ref)
		}
		total += len(ids)
	}
	t.Logf("%d entries in %d sessions flushed around the loss of 1 of 4 drives, %d uploads, %d reads during the run (%d failed); lost: 0",
		total, len(acked), m.Status().Uploaded, reads.ok.Load(), reads.failed.Load())
}
