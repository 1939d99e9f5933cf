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

// TestPull_UnwrittenTreeTakesTheStoredHeader: behind a load balancer, replica B
// opens a session nobody has stored yet (a new tree, nothing written), replica A
// stores the session's first turn, and B pulls before its own first Flush. The
// session's header is A's: B takes it, writes it into its local files and never
// uploads a header of its own, so the store holds one header and no conflict.
func TestPull_UnwrittenTreeTakesTheStoredHeader(t *testing.T) {
	cases := []struct {
		name        string
		cwd         string // B's header options
		appendFirst bool   // B appends an entry before it pulls
	}{
		{name: "nothing appended", cwd: "/w"},
		{name: "entry appended before the pull", cwd: "/w", appendFirst: true},
		{name: "other cwd", cwd: "/elsewhere"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := membucket.New()
			base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			now := func() time.Time { return base }
			newReplica := func(writer, cwd string, seed uint64, skew time.Duration) *sessiontree.Tree {
				s := fullListingStore(t, b, now, 0)
				w, err := transcript.NewWriter(writer)
				require.NoError(t, err)
				c := clock()
				cfg := sessiontree.Config{Root: t.TempDir(), Now: func() time.Time { return c().Add(skew) }, Rand: newSeeded(seed), NoSync: true,
					Uploader: &mirror.Direct{Store: s, Writer: w}, Store: s}
				tr, _, err := sessiontree.Open(ctx, cfg, who, "agent", "s", sessiontree.HeaderOptions{Cwd: cwd})
				require.NoError(t, err)
				return tr
			}
			a := newReplica("a", "/w", 1, 0)
			bt := newReplica("b", tc.cwd, 2, time.Millisecond) // B's header is another line
			_, err := a.AppendMessage(msg(userMsg, "hi"))
			require.NoError(t, err)
			_, err = a.AppendMessage(msg(assistantMsg, "hello", "p", "m"))
			require.NoError(t, err)
			require.NoError(t, a.Flush(ctx))
			if tc.appendFirst {
				_, err = bt.AppendMessage(msg(userMsg, "b's own"))
				require.NoError(t, err)
			}

			_, err = bt.Pull(ctx)
			require.NoError(t, err)
			require.NoError(t, bt.Flush(ctx))

			require.Equal(t, string(a.Header().Raw()), string(bt.Header().Raw()), "B's header")
			require.Equal(t, string(a.Header().Raw()), lines(t, bt.ContextPath())[0], "B's context file")
			require.Equal(t, string(a.Header().Raw()), lines(t, bt.LogPath())[0], "B's log")
			full := fullListingStore(t, b, now, 0)
			res, err := full.ReadAll(ctx, a.Ref())
			require.NoError(t, err)
			require.Empty(t, res.Conflicts, "the store holds one header")
			require.Equal(t, string(a.Header().Raw()), string(res.Entries[0].Raw))
			requireAgrees(t, full, bt, "B")
		})
	}
}
