package sessiontree_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestLoad_CrashDuringFirstFlush: a process killed while its first flush wrote the
// local files leaves a context file without one complete line (empty, or a torn
// header), and perhaps the log the same. Loading must not fail for good: with a
// complete log the tree loads from it and the next flush writes the context file;
// without, the files are set aside (bytes kept in .torn) and the session is not
// found locally, so Open restores it from the outbox or the store.
func TestLoad_CrashDuringFirstFlush(t *testing.T) {
	cases := []struct {
		name        string
		ctx, log    func(full []byte) []byte
		wantLoaded  bool
		wantTornCtx bool
	}{
		{"empty context file", empty, whole, true, false},
		{"torn header in context file", tornHeader, whole, true, true},
		{"both empty", empty, empty, false, false},
		{"both torn", tornHeader, tornHeader, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := testConfig(t)
			a, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{Cwd: "/w"})
			require.NoError(t, err)
			e, err := a.AppendMessage(msg(userMsg, "hello"))
			require.NoError(t, err)
			require.NoError(t, a.Flush(ctx))
			fullCtx, err := os.ReadFile(a.ContextPath())
			require.NoError(t, err)
			fullLog, err := os.ReadFile(a.LogPath())
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(a.ContextPath(), tc.ctx(fullCtx), 0o644))
			require.NoError(t, os.WriteFile(a.LogPath(), tc.log(fullLog), 0o644))

			b, _, err := sessiontree.Load(ctx, cfg, who, "a", "s")
			_, tornErr := os.Stat(a.ContextPath() + sessiontree.TornSuffix)
			if !tc.wantLoaded {
				require.ErrorIs(t, err, bucket.ErrNotFound)
				require.NoFileExists(t, a.ContextPath(), "set aside")
				require.NoFileExists(t, a.LogPath(), "set aside")
				require.Equal(t, tc.wantTornCtx, tornErr == nil, "torn bytes saved")
				return
			}
			require.NoError(t, err)
			require.Equal(t, a.Header(), b.Header())
			require.Len(t, b.Entries(), 1)
			require.Equal(t, e.ID(), b.Entries()[0].ID())
			require.NoError(t, b.Flush(ctx))
			require.Equal(t, tc.wantTornCtx, tornErr == nil || fileExists(a.ContextPath()+sessiontree.TornSuffix))
			c, _, err := sessiontree.Load(ctx, cfg, who, "a", "s")
			require.NoError(t, err, "the flush wrote the context file again")
			require.Equal(t, b.Entries(), c.Entries())
			require.Equal(t, lines(t, a.LogPath()), lines(t, a.ContextPath()))
		})
	}
}

func empty([]byte) []byte        { return nil }
func whole(b []byte) []byte      { return b }
func tornHeader(b []byte) []byte { return b[:20] }

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
