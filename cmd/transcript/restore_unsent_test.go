package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
)

// TestRestoreSession_DropsTheUnsentRecord: a replica whose last Flush the store
// refused left the turn in its local files and named it in its unsent file;
// the process then died. A restore that replaces those files with the
// bucket's (--force: the turn the bucket lacks is given up) leaves files that
// hold what the bucket holds, so nothing of them is unsent: the record goes
// with the files it described, and a Load of the restored files has nothing to
// hand over. It used to stay beside them, naming entries of files that were
// no longer the ones it was written for.
func TestRestoreSession_DropsTheUnsentRecord(t *testing.T) {
	ctx := context.Background()
	cb, s, w := countedStore(t)
	out := t.TempDir()
	cfg := sessiontree.Config{Root: out, NoSync: true, Uploader: &mirror.Direct{Store: s, Writer: w}}
	tree, err := sessiontree.New(cfg, sessiontree.Identity{}, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	for i := range 3 {
		if i == 2 {
			cb.FailNext(faultbucket.OpPut, 1, errors.New("store down"))
		}
		_, err := tree.AppendMessage(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"turn %d","timestamp":1}`, i)))
		require.NoError(t, err)
		err = tree.Flush(ctx)
		if i < 2 {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, sessiontree.ErrUnsent)
		}
	}
	dest := sessiontree.FilesOf(out, tree.Ref())
	require.FileExists(t, dest.Unsent, "the refused turn is recorded")

	outcome, entries, _, err := restoreSession(ctx, s, tree.Ref(), out, t.TempDir(), true)
	require.NoError(t, err)
	require.Equal(t, outcomeRestored, outcome)
	require.Equal(t, 2, entries, "the two turns the bucket holds")
	require.NoFileExists(t, dest.Unsent)
	loaded, _, err := sessiontree.Load(ctx, sessiontree.Config{Root: out, NoSync: true}, sessiontree.Identity{}, "agent", "s")
	require.NoError(t, err)
	_, upload := loaded.Pending()
	require.Zero(t, upload, "nothing of the restored files is to be handed over")

	// Files identical to the bucket's, with a record left beside them: the
	// record goes too.
	require.NoError(t, os.WriteFile(dest.Unsent, []byte("stale"), 0o644))
	outcome, _, _, err = restoreSession(ctx, s, tree.Ref(), out, t.TempDir(), false)
	require.NoError(t, err)
	require.Equal(t, outcomeSkipped, outcome)
	require.NoFileExists(t, dest.Unsent)
}
