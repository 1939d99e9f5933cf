package sessiontree_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
)

// TestReplicas_RandomInterleaving: two replicas (separate roots) share one fake
// store. Random appends, flushes, reloads (from the files, plus the log) and
// pulls in any interleaving end, after a final flush and pull on both,
// with the same entry set on both replicas and in the store, and no entry
// uploaded twice.
func TestReplicas_RandomInterleaving(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 7))
			store := newFakeStore()
			cfgs := make([]sessiontree.Config, 2)
			trees := make([]*sessiontree.Tree, 2)
			uploads := map[string]int{}
			counting := &countingUploader{store: store, seen: uploads}
			for i := range cfgs {
				cfgs[i] = sessiontree.Config{Root: t.TempDir(), Now: clock(), Rand: newSeeded(seed*10 + uint64(i)), NoSync: true, Uploader: counting, Store: store}
			}
			var err error
			trees[0], err = sessiontree.New(cfgs[0], who, "agent", "s", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			_, err = trees[0].AppendMessage(msg(userMsg, "start"))
			require.NoError(t, err)
			require.NoError(t, trees[0].Flush(ctx))
			trees[1], _, err = sessiontree.Restore(ctx, cfgs[1], who, "agent", "s")
			require.NoError(t, err)

			for step := range 200 {
				r := rng.IntN(len(trees))
				tr := trees[r]
				switch op := rng.IntN(10); {
				case op < 4:
					_, err = tr.AppendMessage(msg(userMsg, fmt.Sprintf("r%d-%d", r, step)))
				case op == 4:
					es := tr.Entries()
					_ = tr.Branch(es[rng.IntN(len(es))].ID())
					_, err = tr.AppendMessage(msg(assistantMsg, fmt.Sprintf("b%d-%d", r, step), "p", "m"))
				case op == 5:
					es := tr.Entries()
					_, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "s", FirstKeptEntryID: es[rng.IntN(len(es))].ID(), TokensBefore: step})
				case op < 8:
					err = tr.Flush(ctx)
				case op == 8:
					_, err = tr.Pull(ctx)
				default:
					require.NoError(t, tr.Flush(ctx))
					var nt *sessiontree.Tree
					nt, _, err = sessiontree.Load(ctx, cfgs[r], who, "agent", "s")
					require.NoError(t, err)
					_, err = nt.MergeLog(ctx)
					trees[r] = nt
				}
				require.NoError(t, err)
			}
			for range 2 {
				for _, tr := range trees {
					require.NoError(t, tr.Flush(ctx))
					_, err := tr.Pull(ctx)
					require.NoError(t, err)
				}
			}
			for _, tr := range trees {
				require.NoError(t, tr.Flush(ctx))
			}
			a, b := sortedRaw(trees[0]), sortedRaw(trees[1])
			require.Equal(t, a, b)
			storedRes, _ := store.ReadAll(ctx, trees[0].Ref())
			stored := storedRes.Raw()
			require.Len(t, stored, len(a)+1) // + header
			for id, n := range uploads {
				require.Equal(t, 1, n, "entry %s uploaded %d times", id, n)
			}
			// Reloading each replica from its files gives the same set again.
			for i := range trees {
				nt, rep, err := sessiontree.Load(ctx, cfgs[i], who, "agent", "s")
				require.NoError(t, err)
				require.True(t, rep.Clean())
				_, err = nt.MergeLog(ctx)
				require.NoError(t, err)
				require.Equal(t, a, sortedRaw(nt))
			}
		})
	}
}

type countingUploader struct {
	storesOnUpload
	store *fakeStore
	seen  map[string]int
}

func (c *countingUploader) Upload(ctx context.Context, b sessiontree.Batch) error {
	for _, raw := range b.Entries {
		e, err := sessiontree.ParseEntry(raw)
		if err == nil {
			c.seen[e.ID()]++
		}
	}
	return c.store.Upload(ctx, b)
}

func sortedRaw(tr *sessiontree.Tree) []string {
	var out []string
	for _, e := range tr.Entries() {
		out = append(out, string(e.Raw()))
	}
	sort.Strings(out)
	return out
}
