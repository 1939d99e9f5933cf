package sessiontree_test

import (
	"context"
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
// error; the process then ends before a Flush succeeds (a restart, a crash) and
// the next one opens the session from its local files. Whatever the reopened
// tree holds, its next successful Flush gets into the store: no entry lives only
// in the local files (Load counts what they hold as uploaded), and no stored
// entry hangs from a parent the store lacks.
func TestFlush_FailedUploadThenRestart(t *testing.T) {
	cases := []struct {
		name  string
		first bool // the failing Flush is the session's first
	}{
		{name: "first flush fails", first: true},
		{name: "later flush fails"},
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
			_, err = tr.AppendMessage(msg(userMsg, "refused"))
			require.NoError(t, err)
			_, err = tr.AppendMessage(msg(assistantMsg, "refused", "p", "m"))
			require.NoError(t, err)
			require.ErrorIs(t, tr.Flush(ctx), errUpload)

			// The process ends here; the next one finds the store reachable.
			up.refuse = false
			tr2, _, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: "/w"})
			require.NoError(t, err)
			_, err = tr2.MergeLog(ctx)
			require.NoError(t, err)
			_, err = tr2.AppendMessage(msg(userMsg, "after the restart"))
			require.NoError(t, err)
			require.NoError(t, tr2.Flush(ctx))

			res, err := s.ReadAll(ctx, tr2.Ref())
			require.NoError(t, err)
			stored := map[string]bool{}
			for _, e := range res.Entries {
				stored[e.ID] = true
			}
			for _, e := range tr2.Entries() {
				require.True(t, stored[e.ID()], "entry %s of the reopened tree is not in the store", e.ID())
			}
			require.Empty(t, res.Dangling(), "stored entries whose parent the store lacks")
			require.Empty(t, res.Conflicts)
		})
	}
}
