package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// gets counts GETs of b since the last call.
func gets(b *faultbucket.Bucket) int { return int(b.TakeCounts().Get) }

// countedStore returns a store on a counting memory bucket, the bucket, and a
// writer; the store is closed when the test ends.
func countedStore(t *testing.T) (*faultbucket.Bucket, *transcript.Store, *transcript.Writer) {
	t.Helper()
	cb := faultbucket.Wrap(membucket.New())
	s, err := transcript.New(transcript.Config{Bucket: cb})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	w, err := transcript.NewWriter("writer")
	require.NoError(t, err)
	return cb, s, w
}

// A restore into a directory it restored before fetches only the segments written
// since, unless the files changed meanwhile.
func TestRestoreSession_Incremental(t *testing.T) {
	ctx := context.Background()
	cb, s, w := countedStore(t)
	src, err := sessiontree.New(sessiontree.Config{Root: t.TempDir(), NoSync: true, Uploader: &mirror.Direct{Store: s, Writer: w}},
		sessiontree.Identity{}, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	turn := func() {
		t.Helper()
		_, err := src.AppendMessage(json.RawMessage(`{"role":"user","content":"hi","timestamp":1}`))
		require.NoError(t, err)
		require.NoError(t, src.Flush(ctx))
	}
	for range 3 {
		turn()
	}
	ref := src.Ref()
	out := t.TempDir()

	steps := []struct {
		name     string
		before   func(t *testing.T, dest *sessiontree.Tree)
		want     restoreOutcome
		wantGets int
		wantErr  error
	}{
		{"first restore", nil, outcomeRestored, 3, nil},
		{"nothing new", nil, outcomeSkipped, 0, nil},
		{"one new turn", func(*testing.T, *sessiontree.Tree) { turn() }, outcomeRestored, 1, nil},
		{"local entry added", func(t *testing.T, dest *sessiontree.Tree) {
			turn()
			f, err := os.OpenFile(dest.LogPath(), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(entryLine("local-only", "") + "\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, 0, 5, errLocalOnly},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				dest, _, err := sessiontree.Load(ctx, sessiontree.Config{Root: out}, sessiontree.Identity{}, "agent", "s")
				require.NoError(t, err)
				st.before(t, dest)
			}
			gets(cb)
			outcome, _, _, err := restoreSession(ctx, s, ref, out, t.TempDir(), false)
			require.Equal(t, st.wantGets, gets(cb))
			if st.wantErr != nil {
				require.ErrorIs(t, err, st.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, st.want, outcome)
			dest, _, err := sessiontree.Load(ctx, sessiontree.Config{Root: out}, sessiontree.Identity{}, "agent", "s")
			require.NoError(t, err)
			_, err = dest.MergeLog(ctx)
			require.NoError(t, err)
			require.ElementsMatch(t, entryIDs(src.Entries()), entryIDs(dest.Entries()))
		})
	}
}

func entryIDs(entries []sessiontree.Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID()
	}
	return out
}

// A whole restore lists the namespace once, and restores every session from it.
func TestForEachListedSession_OneListing(t *testing.T) {
	ctx := context.Background()
	cb, s, w := countedStore(t)
	var refs []transcript.TranscriptRef
	for _, sid := range []string{"a", "b", "c", "d"} {
		tree, err := sessiontree.New(sessiontree.Config{Root: t.TempDir(), NoSync: true, Uploader: &mirror.Direct{Store: s, Writer: w}},
			sessiontree.Identity{}, "agent", sid, sessiontree.HeaderOptions{})
		require.NoError(t, err)
		for range 2 {
			_, err := tree.AppendMessage(json.RawMessage(`{"role":"user","content":"hi","timestamp":1}`))
			require.NoError(t, err)
			require.NoError(t, tree.Flush(ctx))
		}
		refs = append(refs, tree.Ref())
	}
	// A selected session without segments is handed over without a listing.
	refs = append(refs, transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "agent", SessionID: "empty"})
	out, scratch := t.TempDir(), t.TempDir()
	cb.ResetCounts()
	var mu sync.Mutex
	outcomes := map[string]error{}
	require.NoError(t, forEachListedSession(ctx, s, 2, refs, "", sessionTreePrefetch(out), func(ctx context.Context, ref transcript.TranscriptRef, r sessiontree.StoreReader) error {
		_, _, _, err := restoreSession(ctx, r, ref, out, scratch, false)
		mu.Lock()
		outcomes[ref.SessionID] = err
		mu.Unlock()
		return nil
	}))
	require.Len(t, outcomes, 5)
	for _, sid := range []string{"a", "b", "c", "d"} {
		require.NoError(t, outcomes[sid], sid)
	}
	require.Error(t, outcomes["empty"])
	c := cb.Counts()
	require.Equal(t, int64(2), c.List, "one listing for the namespace, one for the session it did not show")
	require.Equal(t, int64(8), c.Get, "every segment fetched once")

	// Sessions restored before are not fetched ahead: their files lack nothing.
	cb.ResetCounts()
	require.NoError(t, forEachListedSession(ctx, s, 2, refs[:4], "", sessionTreePrefetch(out), func(ctx context.Context, ref transcript.TranscriptRef, r sessiontree.StoreReader) error {
		outcome, _, _, err := restoreSession(ctx, r, ref, out, scratch, false)
		if err == nil && outcome != outcomeSkipped {
			err = fmt.Errorf("%s: outcome %d, want skipped", ref, outcome)
		}
		return err
	}))
	require.Zero(t, cb.Counts().Get, "nothing fetched for sessions that are up to date")
}
