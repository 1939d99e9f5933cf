package sessiontree_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestFlush_OutboxFullThenCrash: with the store down, the Mirror's outbox
// fills up and refuses the next batch (ErrBackpressure). That Flush fails, but
// its turn is durable locally and recorded as unsent; the process then dies.
// Once the store is back, a new process (a new Mirror on the same outbox, the
// session loaded from its files) gets every entry into the store, in order.
func TestFlush_OutboxFullThenCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fb := faultbucket.Wrap(membucket.New())
	fb.Hang(faultbucket.OpPut)
	store, err := transcript.New(transcript.Config{Bucket: fb})
	require.NoError(t, err)
	defer store.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	outbox := t.TempDir()
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: outbox, MaxPending: 1})
	require.NoError(t, err)
	cfg := testConfig(t)
	cfg.Uploader, cfg.Store = m, store

	tr, _, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: "/a"})
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(userMsg, "accepted"))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx), "the outbox takes one segment")
	_, err = tr.AppendMessage(msg(userMsg, "refused"))
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(assistantMsg, "refused", "p", "m"))
	require.NoError(t, err)
	err = tr.Flush(ctx)
	require.ErrorIs(t, err, mirror.ErrBackpressure)
	require.ErrorIs(t, err, sessiontree.ErrUnsent)
	want := tr.Entries()
	require.Equal(t, ids(want), ids(entriesOf(t, tr.LogPath())))

	// The process dies (the tree is dropped without a Close); the store comes
	// back, and the old outbox drains before the next process takes over.
	fb.Heal()
	require.NoError(t, m.Close(ctx))
	m2, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: outbox})
	require.NoError(t, err)
	cfg.Uploader = m2
	tr2, _, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: "/a"})
	require.NoError(t, err)
	require.Equal(t, ids(want), ids(tr2.Entries()))
	require.NoError(t, tr2.Flush(ctx))
	require.NoError(t, m2.Close(ctx), "drain the outbox")
	require.NoFileExists(t, tr2.UnsentPath())

	res, err := store.ReadAll(ctx, tr2.Ref())
	require.NoError(t, err)
	require.Empty(t, res.Dangling())
	require.Empty(t, res.Conflicts)
	var stored []string
	for _, e := range res.Entries {
		stored = append(stored, string(e.Raw))
	}
	require.Equal(t, lines(t, tr2.LogPath()), stored, "the store holds what the local files hold, in order")
}

// TestLoad_TornUnsentFile: an unsent file cut short at any byte (or damaged)
// is never read as a smaller set: Load either recovers the whole pending set
// (the whole file) or fails with ErrUnsentFile, and never loads the entries as
// handed over.
func TestLoad_TornUnsentFile(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	up := &recorder{fail: errUpload}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	for _, text := range []string{"1", "2", "3"} {
		_, err = tr.AppendMessage(msg(userMsg, text))
		require.NoError(t, err)
	}
	require.ErrorIs(t, tr.Flush(ctx), sessiontree.ErrUnsent)
	full, err := os.ReadFile(tr.UnsentPath())
	require.NoError(t, err)

	check := func(t *testing.T, data []byte) {
		require.NoError(t, os.WriteFile(tr.UnsentPath(), data, 0o644))
		tr2, _, err := sessiontree.Load(ctx, cfg, who, "a", "s")
		if err != nil {
			require.ErrorIs(t, err, sessiontree.ErrUnsentFile)
			return
		}
		_, upload := tr2.Pending()
		require.Equal(t, 3, upload, "recovered: every entry waits for upload")
	}
	for n := range len(full) {
		check(t, full[:n])
	}
	check(t, full)
	for n := range len(full) {
		damaged := bytes.Clone(full)
		damaged[n] ^= 0x20
		check(t, damaged)
	}

	require.NoError(t, os.WriteFile(tr.UnsentPath(), full, 0o644))
	tr2, _, err := sessiontree.Load(ctx, cfg, who, "a", "s")
	require.NoError(t, err)
	up.fail = nil
	require.NoError(t, tr2.Flush(ctx))
	require.Len(t, up.batches, 1)
	require.Equal(t, lines(t, tr.LogPath()), stringsOf(up.batches[0].Entries), "header and entries handed over, in order")
}

// lateUploader refuses batches while refuse is set but keeps what it refused
// in late: a batch that reached the store (or the outbox) after all.
type lateUploader struct {
	*fakeStore
	refuse  bool
	late    [][]byte
	inQueue bool // PendingEntries reports late (it sits in an outbox)
}

func (u *lateUploader) Upload(ctx context.Context, b sessiontree.Batch) error {
	if u.refuse {
		u.late = append(u.late, b.Entries...)
		return errUpload
	}
	return u.fakeStore.Upload(ctx, b)
}

func (u *lateUploader) PendingEntries(context.Context, transcript.TranscriptRef) ([][]byte, error) {
	if u.inQueue {
		return u.late, nil
	}
	return nil, nil
}

// TestLoad_UnsentEntriesFoundLater: entries the unsent file names reach the
// store after all (another replica stored them, or the refused hand-over
// succeeded late) or sit in the uploader's outbox: a restarted tree counts
// them as handed over once it learns so (Pull, or Load asking the uploader),
// hands nothing over twice, holds each entry once and drops the record.
func TestLoad_UnsentEntriesFoundLater(t *testing.T) {
	for _, tc := range []struct {
		name    string
		inQueue bool // the uploader's outbox holds them; else the store does
	}{{"found in the store", false}, {"found in the outbox", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := newFakeStore()
			up := &lateUploader{fakeStore: store}
			cfg := testConfig(t)
			cfg.Uploader, cfg.Store = up, store
			tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			_, err = tr.AppendMessage(msg(userMsg, "stored"))
			require.NoError(t, err)
			require.NoError(t, tr.Flush(ctx))
			up.refuse = true
			_, err = tr.AppendMessage(msg(userMsg, "late"))
			require.NoError(t, err)
			require.ErrorIs(t, tr.Flush(ctx), sessiontree.ErrUnsent)
			require.Len(t, up.late, 1)
			up.refuse, up.inQueue = false, tc.inQueue
			if !tc.inQueue {
				require.NoError(t, store.Upload(ctx, sessiontree.Batch{Ref: tr.Ref(), Entries: up.late}))
			}
			uploads := store.uploads

			tr2, _, err := sessiontree.Load(ctx, cfg, who, "a", "s")
			require.NoError(t, err)
			rep, err := tr2.Pull(ctx)
			require.NoError(t, err)
			require.Zero(t, rep.Added)
			_, upload := tr2.Pending()
			require.Zero(t, upload, "nothing left to hand over")
			require.NoError(t, tr2.Flush(ctx))
			require.Equal(t, uploads, store.uploads, "nothing handed over twice")
			require.NoFileExists(t, tr2.UnsentPath())
			require.Equal(t, ids(tr.Entries()), ids(tr2.Entries()))
			require.Len(t, lines(t, tr2.LogPath()), 3, "each entry once in the log")
		})
	}
}

// appendingUploader appends an entry to the tree while it uploads a batch, as
// a concurrent turn may; it refuses nothing.
type appendingUploader struct {
	storesOnUpload
	mu      sync.Mutex
	tr      *sessiontree.Tree
	once    bool
	batches [][][]byte
}

func (u *appendingUploader) Upload(_ context.Context, b sessiontree.Batch) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.batches = append(u.batches, b.Entries)
	if u.tr != nil && !u.once {
		u.once = true
		if _, err := u.tr.AppendMessage(msg(userMsg, "appended during the hand-over")); err != nil {
			return err
		}
	}
	return nil
}

// TestFlush_AppendDuringHandOver: an entry appended while the uploader takes
// a batch is not in it, but the Flush writes it locally: it is recorded as
// unsent first, so a crash before the next Flush does not leave it in the
// local files as handed over.
func TestFlush_AppendDuringHandOver(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	up := &appendingUploader{}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(userMsg, "1"))
	require.NoError(t, err)
	up.tr = tr
	require.NoError(t, tr.Flush(ctx))
	require.Len(t, lines(t, tr.LogPath()), 3, "the flush wrote the entry appended meanwhile")
	require.FileExists(t, tr.UnsentPath())

	tr2, _, err := sessiontree.Load(ctx, cfg, who, "a", "s")
	require.NoError(t, err)
	_, upload := tr2.Pending()
	require.Equal(t, 1, upload)
	require.NoError(t, tr2.Flush(ctx))
	require.Len(t, up.batches, 2)
	require.Equal(t, [][]byte{tr.Entries()[1].Raw()}, up.batches[1])
	require.NoFileExists(t, tr.UnsentPath())
}

// TestFlush_SuccessWritesNoUnsentFile: a Flush whose hand-over succeeds
// leaves no unsent file, and one left by a session started anew (its files
// were never loaded) goes with the first Flush.
func TestFlush_SuccessWritesNoUnsentFile(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	up := &recorder{}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(userMsg, "1"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(tr.UnsentPath()), 0o755))
	require.NoError(t, os.WriteFile(tr.UnsentPath(), []byte("stale"), 0o644))
	require.NoError(t, tr.Flush(ctx))
	require.NoFileExists(t, tr.UnsentPath())
	_, err = tr.AppendMessage(msg(userMsg, "2"))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	require.NoFileExists(t, tr.UnsentPath())
}

func stringsOf(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// TestFlush_RefusedCompactionThenRestart: a refused flush that carries a
// compaction rewrites the context file without the entries before the kept
// ones; those are in the log only. After a crash they are pending again all
// the same, and the next Flush stores every entry, none before its parent.
func TestFlush_RefusedCompactionThenRestart(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	up := &lateUploader{fakeStore: store}
	cfg := testConfig(t)
	cfg.Uploader, cfg.Store = up, store
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(userMsg, "stored"))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	up.refuse = true
	dropped, err := tr.AppendMessage(msg(userMsg, "summarised"))
	require.NoError(t, err)
	kept, err := tr.AppendMessage(msg(assistantMsg, "kept", "p", "m"))
	require.NoError(t, err)
	_, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "s", FirstKeptEntryID: kept.ID(), TokensBefore: 1})
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(userMsg, "after the compaction"))
	require.NoError(t, err)
	require.ErrorIs(t, tr.Flush(ctx), sessiontree.ErrUnsent)
	require.NotContains(t, ids(entriesOf(t, tr.ContextPath())), dropped.ID(), "the context file was rewritten")
	want := tr.Entries()

	up.refuse = false
	tr2, _, err := sessiontree.Load(ctx, cfg, who, "a", "s")
	require.NoError(t, err)
	_, upload := tr2.Pending()
	require.Equal(t, 4, upload)
	require.NoError(t, tr2.Flush(ctx))
	res, err := store.ReadAll(ctx, tr2.Ref())
	require.NoError(t, err)
	var stored []string
	for _, e := range res.Entries[1:] { // the header first
		en, err := sessiontree.ParseEntry(e.Raw)
		require.NoError(t, err)
		stored = append(stored, en.ID())
	}
	require.Equal(t, ids(want), stored, "every entry stored, in order")
	require.NoFileExists(t, tr2.UnsentPath())
}
