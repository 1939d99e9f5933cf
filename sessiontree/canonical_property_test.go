package sessiontree_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestReplicas_AgreeWithFullRead: replicas whose clocks are skewed write one
// session, while a slow writer adds late segments (new entries, and other versions
// of ids the replicas hold, which win or lose by origin), compactions run at random
// points and replicas restart from their local files or restore without them
// (Open, or WriteRestoredLean then Load). After every incremental
// sync (Flush, then Pull) of a replica, its active leaf, its context and the
// version it keeps of each id are those a full read of the store gives.
func TestReplicas_AgreeWithFullRead(t *testing.T) {
	const seeds, steps = 40, 120
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runAgreement(t, seed, steps) })
	}
}

// agreement is the state of one run of TestReplicas_AgreeWithFullRead.
type agreement struct {
	t     *testing.T
	rng   *rand.Rand
	ref   transcript.TranscriptRef
	full  *transcript.Store // reads the whole session with an exact clock
	late  *transcript.Store // the slow writer's store (two hours behind)
	lateW *transcript.Writer
	cfgs  []sessiontree.Config
	trees []*sessiontree.Tree
	n     int // entries the slow writer made
}

func runAgreement(t *testing.T, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 31))
	b := membucket.New()
	var mu sync.Mutex
	base := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tick := 0
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick++
		return base.Add(time.Duration(tick) * time.Second)
	}
	// Every sync lists the whole session, so it sees every segment stored.
	newStore := func(skew time.Duration) *transcript.Store { return fullListingStore(t, b, now, skew) }
	a := &agreement{t: t, rng: rng, full: newStore(0), late: newStore(-2 * time.Hour)}
	var err error
	a.lateW, err = transcript.NewWriter("late")
	require.NoError(t, err)
	a.ref, err = who.Ref("agent", "agree")
	require.NoError(t, err)
	skews := []time.Duration{0, -20 * time.Minute, 20 * time.Minute}
	for i, skew := range skews {
		s := newStore(skew)
		w, err := transcript.NewWriter(fmt.Sprintf("replica%d", i))
		require.NoError(t, err)
		cfg := sessiontree.Config{Root: t.TempDir(), Now: clock(), Rand: newSeeded(seed*10 + uint64(i)), NoSync: true,
			Uploader: &mirror.Direct{Store: s, Writer: w}, Store: s}
		a.cfgs = append(a.cfgs, cfg)
		tr, _, err := sessiontree.Open(ctx, cfg, who, "agent", "agree", sessiontree.HeaderOptions{})
		require.NoError(t, err)
		if i == 0 {
			_, err = tr.AppendMessage(msg(userMsg, "start"))
			require.NoError(t, err)
			require.NoError(t, tr.Flush(ctx))
		}
		a.trees = append(a.trees, tr)
	}
	for step := range steps {
		a.step(ctx, step)
	}
	for r := range a.trees {
		a.sync(ctx, r, "final")
	}
}

// step does one random operation.
func (a *agreement) step(ctx context.Context, step int) {
	t, rng := a.t, a.rng
	r := rng.IntN(len(a.trees))
	tr := a.trees[r]
	var err error
	switch op := rng.IntN(14); {
	case op < 3:
		_, err = tr.AppendMessage(msg(userMsg, fmt.Sprintf("r%d-%d", r, step)))
	case op == 3:
		es := tr.Entries()
		_ = tr.Branch(es[rng.IntN(len(es))].ID())
		_, err = tr.AppendMessage(msg(assistantMsg, fmt.Sprintf("b%d-%d", r, step), "p", "m"))
	case op == 4:
		es := tr.Entries()
		if e := es[rng.IntN(len(es))]; e.Type() != pi.TypeLeaf {
			_, err = tr.AppendLeaf(e.ID())
		}
	case op == 5:
		es := tr.Entries()
		_, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "s", FirstKeptEntryID: es[rng.IntN(len(es))].ID(), TokensBefore: step})
	case op < 9:
		a.sync(ctx, r, fmt.Sprintf("step %d", step))
	case op == 9:
		a.writeLate(ctx, step)
	case op == 10:
		_, err = a.full.Compact(ctx, a.ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	default:
		a.restart(ctx, r, op)
	}
	require.NoError(t, err)
}

// restart replaces replica r by one loaded from its local files (op 11), or
// restored without them by Open (op 12) or by WriteRestoredLean (op 13).
func (a *agreement) restart(ctx context.Context, r, op int) {
	t, cfg := a.t, a.cfgs[r]
	require.NoError(t, a.trees[r].Flush(ctx))
	if op > 11 {
		files := sessiontree.FilesOf(cfg.Root, a.ref)
		for _, p := range []string{files.Context, files.Log, files.Segments} {
			if err := os.Remove(p); !errors.Is(err, fs.ErrNotExist) {
				require.NoError(t, err)
			}
		}
	}
	var nt *sessiontree.Tree
	var err error
	switch op {
	case 12:
		nt, _, err = sessiontree.Open(ctx, cfg, who, "agent", "agree", sessiontree.HeaderOptions{})
		require.NoError(t, err)
	case 13:
		res, err := a.full.ReadLean(ctx, a.ref)
		require.NoError(t, err)
		_, err = sessiontree.WriteRestoredLean(cfg, who, "agent", "agree", res)
		require.NoError(t, err)
		fallthrough
	default:
		nt, _, err = sessiontree.Load(ctx, cfg, who, "agent", "agree")
		require.NoError(t, err)
		_, err = nt.MergeLog(ctx)
		require.NoError(t, err)
	}
	a.trees[r] = nt
}

// writeLate stores a segment from the slow writer: a few entries hanging from
// entries of the session, sometimes another version of an id it holds (its origin
// is earlier than every replica's, so it wins the conflict).
func (a *agreement) writeLate(ctx context.Context, step int) {
	t := a.t
	res, err := a.full.ReadAll(ctx, a.ref)
	require.NoError(t, err)
	var ids []string
	for _, e := range res.Entries {
		if pe, err := pi.ParseEntry(e.Raw); err == nil && pe.Type() != pi.TypeLeaf {
			ids = append(ids, pe.ID())
		}
	}
	var batch [][]byte
	for range 1 + a.rng.IntN(3) {
		id := fmt.Sprintf("late%04d", a.n)
		a.n++
		if a.rng.IntN(3) == 0 {
			id = ids[a.rng.IntN(len(ids))] // another version of an existing id
		}
		parent := ids[a.rng.IntN(len(ids))]
		if parent == id {
			parent = ""
		}
		batch = append(batch, fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-12-01T10:00:00.000Z","message":{"role":"user","content":"late %d","timestamp":1}}`, id, parent, step))
	}
	_, err = a.late.AppendSegment(ctx, a.ref, batch, a.lateW)
	require.NoError(t, err)
}

// sync flushes and pulls replica r, then compares it with a full read.
func (a *agreement) sync(ctx context.Context, r int, when string) {
	t := a.t
	tr := a.trees[r]
	require.NoError(t, tr.Flush(ctx))
	_, err := tr.Pull(ctx)
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	requireAgrees(t, a.full, tr, fmt.Sprintf("replica %d after sync at %s", r, when))
}

// requireAgrees checks tr against a full read of store: the same entries, the
// same version of each id, the same active leaf and context. what names tr in
// a failure.
func requireAgrees(t *testing.T, store *transcript.Store, tr *sessiontree.Tree, what string) {
	t.Helper()
	res, err := store.ReadAll(context.Background(), tr.Ref())
	require.NoError(t, err)
	var all []pi.Entry
	want := map[string]string{}
	for _, raw := range res.Raw() {
		if e, err := pi.ParseEntry(raw); err == nil {
			all = append(all, e)
			want[e.ID()] = string(raw)
		}
	}
	got := map[string]string{}
	for _, e := range tr.Entries() {
		got[e.ID()] = string(e.Raw())
	}
	var differ []string
	for id, raw := range want {
		if got[id] != raw {
			differ = append(differ, id)
		}
	}
	require.Len(t, got, len(want), "%s: entries", what)
	require.Empty(t, differ, "%s: conflict winners", what)
	leaf, _ := tr.Leaf()
	require.Equal(t, pi.ActiveLeafID(all), leaf, "%s: active leaf", what)
	require.Equal(t, string(sessiontree.BuildContextFrom(all, nil).JSON()), string(tr.BuildContext().JSON()), "%s: context", what)
}

// fullListingStore opens a store on b with the clock now, skewed by skew, whose
// every ReadNew lists the whole session, so a late segment is found at once.
func fullListingStore(t *testing.T, b bucket.Bucket, now func() time.Time, skew time.Duration) *transcript.Store {
	s, err := transcript.New(transcript.Config{Bucket: b, Now: func() time.Time { return now().Add(skew) },
		Reconcile: transcript.ReconcilePolicy{Every: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}
