package sessiontree_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// gets counts GETs of b since the last call.
func gets(b *faultbucket.Bucket) int {
	n := b.Counts().Get
	b.ResetCounts()
	return int(n)
}

// A replica that syncs every turn fetches only the segments written since its last
// sync, also after a restart (the segments file beside its local files), and a
// missing or damaged segments file only costs a full read.
func TestSyncFromRemote_Incremental(t *testing.T) {
	ctx := context.Background()
	gc := faultbucket.Wrap(membucket.New())
	store, err := transcript.New(transcript.Config{Bucket: gc})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	wa, err := transcript.NewWriter("replica-a")
	require.NoError(t, err)

	cfgA := testConfig(t)
	cfgA.Uploader, cfgA.Remote = &mirror.Sync{Store: store, Writer: wa}, store
	a, _, err := sessiontree.Open(ctx, cfgA, rc, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	turn := func(text string) {
		t.Helper()
		_, err := a.AppendMessage(msg(userMsg, text))
		require.NoError(t, err)
		require.NoError(t, a.Flush(ctx))
	}
	turn("one")
	turn("two")

	cfgB := testConfig(t)
	cfgB.Remote = store
	b, _, err := sessiontree.Open(ctx, cfgB, rc, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.NoError(t, b.Flush(ctx))
	require.Equal(t, 2, gets(gc), "a replica without local files reads the whole session once")
	require.Equal(t, 2, b.RemoteSegments())

	for i, text := range []string{"three", "four", "five"} {
		turn(text)
		rep, err := b.SyncFromRemote(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Added)
		require.Equal(t, 1, gets(gc), "turn %d fetches the new segment only", i)
		require.NoError(t, b.Flush(ctx))
	}
	require.Equal(t, ids(a.Entries()), ids(b.Entries()))

	// After a restart, the segments file says what the local files hold.
	segFile := filepath.Join(sessiontree.SessionDir(cfgB.Root, rc.NamespaceName(), "agent"), "s"+sessiontree.SegmentsSuffix)
	tests := []struct {
		name      string
		damage    func(t *testing.T)
		wantGets  int
		wantAdded int
	}{
		{"intact", func(*testing.T) {}, 1, 1},
		{"damaged", func(t *testing.T) {
			data, err := os.ReadFile(segFile)
			require.NoError(t, err)
			data[len(data)/2] ^= 1
			require.NoError(t, os.WriteFile(segFile, data, 0o644))
		}, 7, 1},
		{"missing", func(t *testing.T) { require.NoError(t, os.Remove(segFile)) }, 8, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.damage(t)
			b, _, err := sessiontree.Load(ctx, cfgB, rc, "agent", "s")
			require.NoError(t, err)
			turn("restart " + string(rune('a'+i)))
			gets(gc)
			rep, err := b.SyncFromRemote(ctx)
			require.NoError(t, err)
			require.Equal(t, tt.wantAdded, rep.Added)
			require.Equal(t, tt.wantGets, gets(gc))
			require.NoError(t, b.Flush(ctx))
			require.Equal(t, ids(a.Entries()), ids(b.Entries()))
		})
	}

	// Local files removed but a segments file left behind: the restored tree does
	// not trust it, and the next restart reads only what is new.
	dir := sessiontree.SessionDir(cfgB.Root, rc.NamespaceName(), "agent")
	require.NoError(t, os.Remove(filepath.Join(dir, "s"+sessiontree.ContextSuffix)))
	require.NoError(t, os.Remove(filepath.Join(dir, "s"+sessiontree.LogSuffix)))
	gets(gc)
	b, _, err = sessiontree.Open(ctx, cfgB, rc, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.Equal(t, 8, gets(gc))
	require.Equal(t, ids(a.Entries()), ids(b.Entries()))
	require.NoError(t, b.Flush(ctx))
	b, _, err = sessiontree.Load(ctx, cfgB, rc, "agent", "s")
	require.NoError(t, err)
	require.Equal(t, 8, b.RemoteSegments())
	turn("last")
	_, err = b.SyncFromRemote(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, gets(gc))
}
