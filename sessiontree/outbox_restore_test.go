package sessiontree_test

import (
	"context"
	"errors"
	"os"
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

// TestOpen_RestoresFromOutbox: Flush hands a batch to the mirror before it writes the
// local files, so a crash between the two leaves the session only in the mirror's
// outbox while the store is unreachable. Opening it again must continue that session
// (same header, same entries) instead of starting a second one whose header
// conflicts with the first once the outbox drains.
func TestOpen_RestoresFromOutbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fb := faultbucket.Wrap(membucket.New())
	fb.Hang(faultbucket.OpPut) // the store is down: segments stay in the outbox
	store, err := transcript.New(transcript.Config{Bucket: fb})
	require.NoError(t, err)
	defer store.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: t.TempDir()})
	require.NoError(t, err)
	defer func() {
		fb.Heal()
		require.NoError(t, m.Close(ctx))
	}()
	cfg := testConfig(t)
	cfg.Uploader, cfg.Store = m, store

	a, _, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: "/a"})
	require.NoError(t, err)
	first, err := a.AppendMessage(msg(userMsg, "hello"))
	require.NoError(t, err)
	require.NoError(t, a.Flush(ctx))
	// The crash came before the local files were written.
	require.NoError(t, os.Remove(a.ContextPath()))
	require.NoError(t, os.Remove(a.LogPath()))

	b, rep, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: "/b"})
	require.NoError(t, err)
	require.Empty(t, rep.Conflicts)
	require.Equal(t, a.Header(), b.Header(), "the session continues, it is not started anew")
	require.Len(t, b.Entries(), 1)
	require.Equal(t, first.ID(), b.Entries()[0].ID())
	_, upload := b.Pending()
	require.Zero(t, upload, "what the outbox holds is not handed over twice")

	second, err := b.AppendMessage(msg(userMsg, "again"))
	require.NoError(t, err)
	parent, _ := second.ParentID()
	require.Equal(t, first.ID(), parent)
	require.NoError(t, b.Flush(ctx))
	fb.Heal()
	require.NoError(t, m.AwaitQuiescence(ctx))
	res, err := store.ReadAll(ctx, b.Ref())
	require.NoError(t, err)
	require.Empty(t, res.Conflicts, "one header in the store")
	require.Len(t, res.Entries, 3, "header and both entries")
}

// holdingUploader accepts batches and never stores them: everything it accepted
// stays among its PendingEntries, as in an outbox while the store is down.
type holdingUploader struct{ recorder }

func (h *holdingUploader) PendingEntries(_ context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out [][]byte
	for _, b := range h.batches {
		if b.Ref == ref {
			out = append(out, b.Entries...)
		}
	}
	return out, nil
}

// TestRestore_Sources: Restore reads the store (Config.Store) and what the
// uploader holds (its PendingEntries), needs one of the two, and finds no session
// where neither has its header.
func TestRestore_Sources(t *testing.T) {
	ctx := context.Background()
	holding := &holdingUploader{}
	cfg := testConfig(t)
	cfg.Uploader = holding
	a, err := sessiontree.New(cfg, who, "agent", "held", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	first, err := a.AppendMessage(msg(userMsg, "only in the outbox"))
	require.NoError(t, err)
	require.NoError(t, a.Flush(ctx))

	for _, tc := range []struct {
		name     string
		uploader sessiontree.Uploader
		session  string
		entries  int   // restored entries, when err is nil
		err      error // nil, bucket.ErrNotFound, or errNoSource for the configuration error
	}{
		{"uploader holds the session", holding, "held", 1, nil},
		{"uploader holds another session", holding, "other", 0, bucket.ErrNotFound},
		{"uploader holds nothing", &recorder{}, "held", 0, bucket.ErrNotFound},
		{"no uploader and no store", nil, "held", 0, errNoSource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.Uploader = tc.uploader
			b, _, err := sessiontree.Restore(ctx, cfg, who, "agent", tc.session)
			switch tc.err {
			case nil:
				require.NoError(t, err)
				require.Equal(t, a.Header(), b.Header())
				require.Len(t, b.Entries(), tc.entries)
				require.Equal(t, first.ID(), b.Entries()[0].ID())
			case errNoSource:
				require.ErrorContains(t, err, "no Config.Store and no Config.Uploader")
				require.NotErrorIs(t, err, bucket.ErrNotFound)
			default:
				require.ErrorIs(t, err, tc.err)
			}
		})
	}
}

// errNoSource marks the case of TestRestore_Sources that is a configuration error.
var errNoSource = errors.New("no source")
