package transcript

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// refMergeOrder is the merge order as the design states it, written for
// clarity rather than speed: entries sorted by origin; each entry's parent the
// last entry of that id in this order (none for an empty parentId, an unknown
// one or the entry itself); then, repeatedly, the earliest entry in origin
// order whose parent is placed (or that has none), and when no entry is
// ready, the earliest one left (a cycle broken there).
func refMergeOrder(entries []Entry) ([]Entry, int) {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b Entry) int { return a.Origin.Compare(b.Origin) })
	last := map[string]int{}
	for k, e := range sorted {
		last[e.ID] = k
	}
	par := make([]int, len(sorted))
	for k, e := range sorted {
		par[k] = -1
		if p, ok := last[e.ParentID]; ok && e.ParentID != "" && p != k {
			par[k] = p
		}
	}
	placed := make([]bool, len(sorted))
	out := make([]Entry, 0, len(sorted))
	cycles := 0
	for len(out) < len(sorted) {
		next := -1
		for k := range sorted {
			if !placed[k] && (par[k] < 0 || placed[par[k]]) {
				next = k
				break
			}
		}
		if next < 0 {
			cycles++
			next = slices.Index(placed, false)
		}
		placed[next] = true
		out = append(out, sorted[next])
	}
	return out, cycles
}

// TestMergeOrder_SameAsReference compares mergeOrder with refMergeOrder on
// random sets of entries: keys of several writers and clocks in any order,
// parents that name an earlier entry, a later one, the entry itself, nothing
// or no entry, so chains, branches and cycles. With distinct ids it is checked
// as the merge calls it (its id map handed in) and as CanonicalOrder calls it;
// with repeated ids, as CanonicalOrder.
func TestMergeOrder_SameAsReference(t *testing.T) {
	for seed := range uint64(400) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := rng.IntN(80)
		distinct := seed%3 != 0
		keys := make([]string, 1+rng.IntN(6))
		for k := range keys {
			keys[k] = fmt.Sprintf("L0/20260101T0000%02d.000000000Z-w%d-%016x-%016x.jsonl.zst", rng.IntN(60), rng.IntN(3), k, k)
		}
		entries := make([]Entry, n)
		for i := range entries {
			id := fmt.Sprintf("e%d", i)
			if !distinct {
				id = fmt.Sprintf("e%d", rng.IntN(max(1, n/2)))
			}
			entries[i] = Entry{ID: id, Origin: Origin{Key: keys[rng.IntN(len(keys))], Pos: i}}
		}
		for i := range entries {
			switch r := rng.IntN(10); {
			case r == 0:
			case r == 1:
				entries[i].ParentID = entries[i].ID
			case r == 2:
				entries[i].ParentID = "nobody"
			case r < 5 || i == 0:
				entries[i].ParentID = entries[rng.IntN(n)].ID
			default:
				entries[i].ParentID = entries[i-1].ID
			}
		}
		in := slices.Clone(entries)
		want, wantCycles := refMergeOrder(entries)

		got, cycles := CanonicalOrder(entries)
		require.Equal(t, in, entries, "seed %d: the input is not modified", seed)
		require.Equal(t, idsOf(want), idsOf(got), "seed %d: CanonicalOrder", seed)
		if n > 0 {
			require.Equal(t, want, got, "seed %d", seed)
		}
		require.Equal(t, wantCycles, cycles, "seed %d", seed)
		if !distinct {
			continue
		}
		byID := make(map[string]int, n)
		for i, e := range entries {
			byID[e.ID] = i
		}
		wantDangling := false
		for _, e := range entries {
			if _, ok := byID[e.ParentID]; e.ParentID != "" && !ok {
				wantDangling = true
			}
		}
		var dangling bool
		got, cycles, _, dangling = mergeOrder(entries, func(id string) (int, bool) { i, ok := byID[id]; return i, ok })
		require.Equal(t, idsOf(want), idsOf(got), "seed %d: with the merge's id map", seed)
		require.Equal(t, wantCycles, cycles, "seed %d", seed)
		require.Equal(t, wantDangling, dangling, "seed %d: an entry whose parentId names no entry", seed)
	}
}

func idsOf(entries []Entry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = fmt.Sprintf("%s<%s@%s", e.ID, e.ParentID, e.Origin.Key[3:20])
	}
	return out
}
