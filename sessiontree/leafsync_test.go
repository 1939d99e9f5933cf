package sessiontree_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A replica that syncs incrementally ends on the active leaf a full read of the
// store gives (the one every replica agrees on), also after a restart:
//   - when an increment holds a "leaf" entry whose target the replica held
//     already (a branch move made on another replica; it used to null the leaf);
//   - when an increment holds only an entry that sorts before entries the replica
//     holds (a writer whose clock is an hour slow, on a branch of its own; it used
//     to take the leaf, and after a restart the last line of the local files
//     would).
func TestPull_IncrementalLeaf(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// act writes on another replica, through store, or through slow (a store
		// whose clock is an hour behind); first is the session's first entry.
		act      func(t *testing.T, a *sessiontree.Tree, slow *transcript.Store, first pi.Entry)
		wantLeaf func(first, last pi.Entry) string
	}{
		{"branch move on another replica", func(t *testing.T, a *sessiontree.Tree, _ *transcript.Store, first pi.Entry) {
			_, err := a.AppendLeaf(first.ID())
			require.NoError(t, err)
			require.NoError(t, a.Flush(t.Context()))
		}, func(first, _ pi.Entry) string { return first.ID() }},
		{"late entry from a slow clock", func(t *testing.T, _ *sessiontree.Tree, slow *transcript.Store, first pi.Entry) {
			w, err := transcript.NewWriter("slow")
			require.NoError(t, err)
			raw := fmt.Sprintf(`{"type":"message","id":"late0001","parentId":%q,"timestamp":"2026-12-01T11:00:00.000Z","message":{"role":"user","content":"late","timestamp":1}}`, first.ID())
			_, err = slow.AppendSegment(t.Context(), transcript.TranscriptRef{Namespace: who.NamespaceName(), AgentID: "agent", SessionID: "leaf"}, [][]byte{[]byte(raw)}, w)
			require.NoError(t, err)
		}, func(_, last pi.Entry) string { return last.ID() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			b := membucket.New()
			clock := func() time.Time { return now }
			store, slow := fullListingStore(t, b, clock, 0), fullListingStore(t, b, clock, -time.Hour)
			w, err := transcript.NewWriter("replica-a")
			require.NoError(t, err)
			cfgA := testConfig(t)
			cfgA.Uploader, cfgA.Store = &mirror.Direct{Store: store, Writer: w}, store
			a, _, err := sessiontree.Open(ctx, cfgA, who, "agent", "leaf", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			first, err := a.AppendMessage(msg(userMsg, "one"))
			require.NoError(t, err)
			last, err := a.AppendMessage(msg(userMsg, "two"))
			require.NoError(t, err)
			require.NoError(t, a.Flush(ctx))

			cfgB := testConfig(t)
			cfgB.Store = store
			replicaB, _, err := sessiontree.Open(ctx, cfgB, who, "agent", "leaf", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			require.NoError(t, replicaB.Flush(ctx))
			// B restarts from its local files: what it knows of the store comes from
			// the segments file beside them.
			replicaB, _, err = sessiontree.Load(ctx, cfgB, who, "agent", "leaf")
			require.NoError(t, err)

			tt.act(t, a, slow, first)
			rep, err := replicaB.Pull(ctx)
			require.NoError(t, err)
			require.Equal(t, 1, rep.Added)

			res, err := store.ReadAll(ctx, replicaB.Ref())
			require.NoError(t, err)
			var all []pi.Entry
			for _, raw := range res.Raw() {
				if e, err := pi.ParseEntry(raw); err == nil {
					all = append(all, e)
				}
			}
			want := tt.wantLeaf(first, last)
			require.Equal(t, want, pi.ActiveLeafID(all), "the full read's leaf")
			leaf, ok := replicaB.Leaf()
			require.True(t, ok, "the leaf is not null")
			require.Equal(t, want, leaf)

			// The local files hold the entries in the order they arrived; a restart
			// from them keeps the leaf (the segments file records it).
			require.NoError(t, replicaB.Flush(ctx))
			seg, err := os.ReadFile(replicaB.SegmentsPath())
			require.NoError(t, err)
			require.Contains(t, string(seg), "\norigins ", "the segments file names the origins file")
			require.FileExists(t, replicaB.OriginsPath())
			restarted, _, err := sessiontree.Load(ctx, cfgB, who, "agent", "leaf")
			require.NoError(t, err)
			leaf, ok = restarted.Leaf()
			require.True(t, ok)
			require.Equal(t, want, leaf, "after a restart")
			require.Equal(t, replicaB.BuildContext(), restarted.BuildContext())
		})
	}
}
