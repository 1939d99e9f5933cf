package sessiontree_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A log merge that reorders the tree's entries (its log holds them in another
// order) makes the last full ordering's indices stale: a later pull whose new
// entries do not decide the leaf (a "leaf" entry whose target is unknown) must
// not take the leaf the old indices name, but order the whole set again and end
// on the leaf a full read gives.
func TestMergeLog_ReorderDropsCanonicalState(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	store := fullListingStore(t, membucket.New(), now, 0)
	w, err := transcript.NewWriter("writer")
	require.NoError(t, err)
	ref, err := who.Ref("agent", "reorder")
	require.NoError(t, err)
	entry := func(id, parent string) []byte {
		return []byte(`{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"` + id + `","timestamp":1}}`)
	}
	// Two children of root0001: the later one in the segment is the leaf.
	_, err = store.AppendSegment(ctx, ref, [][]byte{
		pi.NewHeader("reorder", now(), "/", "").Raw(),
		[]byte(`{"type":"message","id":"root0001","parentId":null,"timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"root","timestamp":1}}`),
		entry("left0001", "root0001"),
		entry("rght0001", "root0001"),
	}, w)
	require.NoError(t, err)

	cfg := testConfig(t)
	cfg.Store = store
	replica, _, err := sessiontree.Open(ctx, cfg, who, "agent", "reorder", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	requireAgrees(t, store, replica, "restored") // the restore ordered the whole set
	require.NoError(t, replica.Flush(ctx))

	// The log holds the two children the other way round.
	data, err := os.ReadFile(replica.LogPath())
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.Len(t, lines, 5, "header, three entries, and the empty rest")
	require.Contains(t, lines[2], "left0001")
	lines[2], lines[3] = lines[3], lines[2]
	require.NoError(t, os.WriteFile(replica.LogPath(), []byte(strings.Join(lines, "")), 0o644))
	_, err = replica.MergeLog(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"root0001", "rght0001", "left0001"}, ids(replica.Entries()), "the log's order")
	leaf, _ := replica.Leaf()
	require.Equal(t, "rght0001", leaf, "the leaf stays on its entry")

	// A "leaf" entry whose target no one holds leaves the leaf where it is.
	_, err = store.AppendSegment(ctx, ref, [][]byte{
		[]byte(`{"type":"leaf","id":"leaf0001","parentId":"rght0001","timestamp":"2026-12-01T10:00:01.000Z","targetId":"gone0001"}`),
	}, w)
	require.NoError(t, err)
	rep, err := replica.Pull(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Added)
	requireAgrees(t, store, replica, "after the pull")
	leaf, _ = replica.Leaf()
	require.Equal(t, "rght0001", leaf)
}
