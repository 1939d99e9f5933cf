package sessiontree_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A replica's origins file after a crash or a fault: a torn tail or a tail the
// segments file never named is ignored (the replica keeps its set and pulls only
// what is new) and cut by the next write; a missing, shorter or changed file
// costs one full read. In every case the replica then agrees with a full read,
// and the files it leaves load with their set again.
func TestOriginsFile_CrashAndDamage(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
		keeps  bool // the loaded replica keeps its set
	}{
		{"intact", func(*testing.T, string) {}, true},
		{"torn tail", func(t *testing.T, p string) { appendBytes(t, p, "17 00000000") }, true},
		{"longer than recorded", func(t *testing.T, p string) {
			appendBytes(t, p, "at L0/20260101T000000.000000000Z-x-0000000000000001-0000000000000000.jsonl.zst\n0 0000000000000000 \"x\"\n")
		}, true},
		{"missing", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, false},
		{"cut short", func(t *testing.T, p string) {
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, st.Size()-4))
		}, false},
		{"changed", func(t *testing.T, p string) {
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			data[len(data)-3] ^= 1 // in the last id: still well formed
			require.NoError(t, os.WriteFile(p, data, 0o644))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			now := func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
			store := fullListingStore(t, membucket.New(), now, 0)
			writer := openReplica(t, store, "writer", "origins")
			turn := func(n int) {
				_, err := writer.AppendMessage(msg(userMsg, fmt.Sprintf("turn %d", n)))
				require.NoError(t, err)
				require.NoError(t, writer.Flush(ctx))
			}
			turn(0)
			cfg := testConfig(t)
			cfg.Store = store
			replica, _, err := sessiontree.Open(ctx, cfg, who, "agent", "origins", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			require.NoError(t, replica.Flush(ctx))
			for n := 1; n <= 3; n++ {
				turn(n)
				before, err := os.ReadFile(replica.OriginsPath())
				require.NoError(t, err)
				_, err = replica.Pull(ctx)
				require.NoError(t, err)
				require.NoError(t, replica.Flush(ctx))
				after, err := os.ReadFile(replica.OriginsPath())
				require.NoError(t, err)
				require.Greater(t, len(after), len(before), "turn %d: records appended", n)
				require.Equal(t, string(before), string(after[:len(before)]), "turn %d: appended, not rewritten", n)
			}
			held := replica.HeldSegments()

			tt.damage(t, replica.OriginsPath())
			loaded, rep, err := sessiontree.Load(ctx, cfg, who, "agent", "origins")
			require.NoError(t, err)
			require.True(t, rep.Clean())
			if tt.keeps {
				require.Equal(t, held, loaded.HeldSegments(), "the set is kept")
			} else {
				require.Zero(t, loaded.HeldSegments(), "the set is read again")
			}
			turn(4)
			_, err = loaded.Pull(ctx)
			require.NoError(t, err)
			requireAgrees(t, store, loaded, "after the pull")
			require.NoError(t, loaded.Flush(ctx))
			data, err := os.ReadFile(loaded.OriginsPath())
			require.NoError(t, err)
			require.NotContains(t, string(data), `"x"`, "a tail never named is cut")

			again, _, err := sessiontree.Load(ctx, cfg, who, "agent", "origins")
			require.NoError(t, err)
			require.Equal(t, held+1, again.HeldSegments(), "the files written load with their set")
			_, err = again.Pull(ctx)
			require.NoError(t, err)
			requireAgrees(t, store, again, "loaded again")
		})
	}
}

// appendBytes appends s to the file at path.
func appendBytes(t *testing.T, path, s string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
