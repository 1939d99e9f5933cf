package sessiontree_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// refusingUploader refuses every batch while refuse is set (an outbox that is
// full, a store that is down for mirror.Direct), and otherwise hands it on.
type refusingUploader struct {
	sessiontree.Uploader
	refuse bool
}

func (u *refusingUploader) Upload(ctx context.Context, b sessiontree.Batch) error {
	if u.refuse {
		return errUpload
	}
	return u.Uploader.Upload(ctx, b)
}

// TestFlush_FailedUploadThenRestart: a Flush whose hand-over fails returns an
// error wrapping ErrUnsent but makes the turn durable locally, recording what
// the uploader lacks in the unsent file; the process then ends without a
// Close before a Flush succeeds (a crash) and the next one loads the session
// from its local files. The reopened tree has every entry of the refused
// flushes, pending for upload again, and its next Flush hands them over,
// older ones first: the store gets every entry in order, none hanging from a
// parent it lacks, the local files hold what the store holds, and the record
// is gone.
func TestFlush_FailedUploadThenRestart(t *testing.T) {
	cases := []struct {
		name    string
		first   bool // the first failing Flush is the session's first
		refused int  // Flushes refused before the crash
		// cutCtx: the crash came between the log's append and the context
		// file's (the context file is put back as it was before that flush).
		cutCtx bool
	}{
		{name: "first flush fails", first: true, refused: 1},
		{name: "later flush fails", refused: 1},
		{name: "two flushes fail", refused: 2},
		{name: "first two flushes fail", first: true, refused: 2},
		{name: "crash between the log and the context file", refused: 2, cutCtx: true},
		{name: "first flush fails, crash before the context file", first: true, refused: 1, cutCtx: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := membucket.New()
			base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			s := fullListingStore(t, b, func() time.Time { return base }, 0)
			w, err := transcript.NewWriter("w")
			require.NoError(t, err)
			up := &refusingUploader{Uploader: &mirror.Direct{Store: s, Writer: w}}
			cfg := testConfig(t)
			cfg.Uploader, cfg.Store = up, s
			tr, _, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: "/w"})
			require.NoError(t, err)
			if !tc.first {
				_, err = tr.AppendMessage(msg(userMsg, "stored"))
				require.NoError(t, err)
				require.NoError(t, tr.Flush(ctx))
			}
			up.refuse = true
			var ctxBefore []byte
			for n := range tc.refused {
				if tc.cutCtx && n == tc.refused-1 {
					ctxBefore, err = os.ReadFile(tr.ContextPath())
					require.True(t, err == nil || errors.Is(err, fs.ErrNotExist), err)
				}
				_, err = tr.AppendMessage(msg(userMsg, fmt.Sprintf("refused %d", n)))
				require.NoError(t, err)
				_, err = tr.AppendMessage(msg(assistantMsg, fmt.Sprintf("refused %d", n), "p", "m"))
				require.NoError(t, err)
				err = tr.Flush(ctx)
				require.ErrorIs(t, err, errUpload)
				require.ErrorIs(t, err, sessiontree.ErrUnsent, "written locally all the same")
				require.FileExists(t, tr.UnsentPath())
			}
			want := tr.Entries()
			require.Equal(t, ids(want), ids(entriesOf(t, tr.LogPath())), "every turn is durable locally")
			if tc.cutCtx && ctxBefore == nil {
				require.NoError(t, os.Remove(tr.ContextPath()))
			} else if tc.cutCtx {
				require.NoError(t, os.WriteFile(tr.ContextPath(), ctxBefore, 0o644))
			}

			// The process ends here, without a Close; the next one finds the
			// store reachable.
			up.refuse = false
			tr2, _, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: "/w"})
			require.NoError(t, err)
			require.Equal(t, ids(want), ids(tr2.Entries()), "the reopened tree has every entry")
			_, upload := tr2.Pending()
			require.Equal(t, 2*tc.refused, upload, "the refused entries wait for upload again")
			_, err = tr2.AppendMessage(msg(userMsg, "after the restart"))
			require.NoError(t, err)
			require.NoError(t, tr2.Flush(ctx))
			require.NoFileExists(t, tr2.UnsentPath(), "nothing waits any more")
			_, upload = tr2.Pending()
			require.Zero(t, upload)

			res, err := s.ReadAll(ctx, tr2.Ref())
			require.NoError(t, err)
			require.Empty(t, res.Dangling(), "stored entries whose parent the store lacks")
			require.Empty(t, res.Conflicts)
			var stored []string
			for _, e := range res.Entries {
				stored = append(stored, string(e.Raw))
			}
			require.Equal(t, string(tr2.Header().Raw()), stored[0], "the header is stored, once, first")
			var local []string
			for _, e := range tr2.Entries() {
				local = append(local, string(e.Raw()))
			}
			require.Equal(t, local, stored[1:], "the store gets every entry, in order")
			require.Equal(t, stored, lines(t, tr2.LogPath()), "the log holds what the store holds")
			require.Equal(t, stored, lines(t, tr2.ContextPath()), "so does the context file")
		})
	}
}

// entriesOf returns the entries of the session file at path.
func entriesOf(t testing.TB, path string) []sessiontree.Entry {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	_, es, _, err := sessiontree.ParseSession(f)
	require.NoError(t, err)
	return es
}
