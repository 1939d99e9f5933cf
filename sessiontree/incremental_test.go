package sessiontree_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// gets counts GETs of b since the last call.
func gets(b *faultbucket.Bucket) int { return int(b.TakeCounts().Get) }

// A replica that syncs every turn fetches only the segments written since its last
// sync, also after a restart (the segments file beside its local files), and a
// missing or damaged segments file only costs a full read.
func TestPull_Incremental(t *testing.T) {
	ctx := context.Background()
	gc := faultbucket.Wrap(membucket.New())
	store, err := transcript.New(transcript.Config{Bucket: gc})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	wa, err := transcript.NewWriter("replica-a")
	require.NoError(t, err)

	cfgA := testConfig(t)
	cfgA.Uploader, cfgA.Store = &mirror.Direct{Store: store, Writer: wa}, store
	a, _, err := sessiontree.Open(ctx, cfgA, who, "agent", "s", sessiontree.HeaderOptions{})
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
	cfgB.Store = store
	b, _, err := sessiontree.Open(ctx, cfgB, who, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.NoError(t, b.Flush(ctx))
	require.Equal(t, 2, gets(gc), "a replica without local files reads the whole session once")
	require.Equal(t, 2, b.HeldSegments())

	for i, text := range []string{"three", "four", "five"} {
		turn(text)
		rep, err := b.Pull(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Added)
		require.Equal(t, 1, gets(gc), "turn %d fetches the new segment only", i)
		require.NoError(t, b.Flush(ctx))
	}
	require.Equal(t, ids(a.Entries()), ids(b.Entries()))

	// After a restart, the segments file says what the local files hold.
	ref, err := who.Ref("agent", "s")
	require.NoError(t, err)
	files := sessiontree.FilesOf(cfgB.Root, ref)
	segFile := files.Segments
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
			b, _, err := sessiontree.Load(ctx, cfgB, who, "agent", "s")
			require.NoError(t, err)
			turn("restart " + string(rune('a'+i)))
			gets(gc)
			rep, err := b.Pull(ctx)
			require.NoError(t, err)
			require.Equal(t, tt.wantAdded, rep.Added)
			require.Equal(t, tt.wantGets, gets(gc))
			require.NoError(t, b.Flush(ctx))
			require.Equal(t, ids(a.Entries()), ids(b.Entries()))
		})
	}

	// Local files removed but a segments file left behind: the restored tree does
	// not trust it, and the next restart reads only what is new.
	require.NoError(t, os.Remove(files.Context))
	require.NoError(t, os.Remove(files.Log))
	gets(gc)
	b, _, err = sessiontree.Open(ctx, cfgB, who, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.Equal(t, 8, gets(gc))
	require.Equal(t, ids(a.Entries()), ids(b.Entries()))
	require.NoError(t, b.Flush(ctx))
	b, _, err = sessiontree.Load(ctx, cfgB, who, "agent", "s")
	require.NoError(t, err)
	require.Equal(t, 8, b.HeldSegments())
	turn("last")
	_, err = b.Pull(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, gets(gc))
}

// Replicas whose clocks are an hour fast and an hour slow flush turns without
// syncing first, so the slow one's keys land far below the newest key a reader
// holds; a replica that syncs every turn still holds every entry within one
// reconciliation period (Reconcile.Every syncs) after the last write.
func TestPull_SkewedWriters(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	const every = 4
	newStore := func(skew time.Duration, policy transcript.ReconcilePolicy) *transcript.Store {
		s, err := transcript.New(transcript.Config{Bucket: b, Now: func() time.Time { return now.Add(skew) }, Reconcile: policy})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	}
	replica := func(name string, skew time.Duration) *sessiontree.Tree {
		return openReplica(t, newStore(skew, transcript.ReconcilePolicy{}), name, "skew")
	}
	exact := replica("exact", 0)
	_, err := exact.AppendMessage(msg(userMsg, "start"))
	require.NoError(t, err)
	require.NoError(t, exact.Flush(ctx))
	writers := []*sessiontree.Tree{replica("fast", time.Hour), replica("slow", -time.Hour), exact}

	cfg := testConfig(t)
	cfg.Store = newStore(0, transcript.ReconcilePolicy{Every: every, After: time.Hour})
	reader, _, err := sessiontree.Open(ctx, cfg, who, "agent", "skew", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	var late int // turns the reader's sync right after them missed
	for i := range 6 {
		w := writers[i%len(writers)]
		_, err := w.AppendMessage(msg(userMsg, fmt.Sprintf("turn %d", i)))
		require.NoError(t, err)
		require.NoError(t, w.Flush(ctx))
		rep, err := reader.Pull(ctx)
		require.NoError(t, err)
		if rep.Added == 0 {
			late++
		}
	}
	require.NotZero(t, late, "the slow replica's turns land below the listing's start")
	want := map[string]bool{}
	for _, w := range writers {
		for _, e := range w.Entries() {
			want[e.ID()] = true
		}
	}
	for sync := 1; ; sync++ {
		_, err := reader.Pull(ctx)
		require.NoError(t, err)
		if len(reader.Entries()) == len(want) {
			break
		}
		require.Less(t, sync, every+1, "every entry within one reconciliation period")
	}
	for _, e := range reader.Entries() {
		require.True(t, want[e.ID()], e.ID())
	}
}

// A sync that moves the active leaf onto another replica's entries, which hang
// from an entry this replica's last compaction rewrite left out of its context
// file, makes the next flush rewrite the file: read alone it must still give the
// replica's context.
func TestPull_LeafMovedOffTheContextFile(t *testing.T) {
	ctx := context.Background()
	s, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	a := openReplica(t, s, "a", "moved")
	root, err := a.AppendMessage(msg(userMsg, "first question"))
	require.NoError(t, err)
	_, err = a.AppendMessage(msg(assistantMsg, "first answer", "p", "m"))
	require.NoError(t, err)
	later, err := a.AppendMessage(msg(userMsg, "later"))
	require.NoError(t, err)
	_, err = a.AppendCompaction(sessiontree.Compaction{Summary: "s", FirstKeptEntryID: later.ID(), TokensBefore: 9})
	require.NoError(t, err)
	require.NoError(t, a.Flush(ctx))

	b := openReplica(t, s, "b", "moved")
	_, err = b.Pull(ctx)
	require.NoError(t, err)
	require.NoError(t, b.Branch(root.ID()))
	_, err = b.AppendMessage(msg(assistantMsg, "another answer", "p", "m"))
	require.NoError(t, err)
	require.NoError(t, b.Flush(ctx))

	_, err = a.Pull(ctx)
	require.NoError(t, err)
	require.NoError(t, a.Flush(ctx))
	want := string(a.BuildContext().JSON())
	require.Contains(t, want, "first question")
	require.Contains(t, want, "another answer")
	f, err := os.Open(a.ContextPath())
	require.NoError(t, err)
	defer f.Close()
	_, es, _, err := sessiontree.ParseSession(f)
	require.NoError(t, err)
	require.Equal(t, want, string(sessiontree.BuildContextFrom(es, nil).JSON()), "the context file read alone")
}

// openReplica opens session of agent "agent" as a replica named name: its own
// files, uploading to s (mirror.Direct) and syncing from it.
func openReplica(t *testing.T, s *transcript.Store, name, session string) *sessiontree.Tree {
	t.Helper()
	w, err := transcript.NewWriter(name)
	require.NoError(t, err)
	cfg := testConfig(t)
	cfg.Uploader, cfg.Store = &mirror.Direct{Store: s, Writer: w}, s
	tree, _, err := sessiontree.Open(context.Background(), cfg, who, "agent", session, sessiontree.HeaderOptions{})
	require.NoError(t, err)
	return tree
}
