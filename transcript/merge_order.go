package transcript

import (
	"cmp"
	"container/heap"
	"slices"

	"github.com/transcriptstore/transcript/segment"
)

// originsOf returns the origin of each entry position of seg (listed as info).
// A segment that records origins (format version 2) gives them, an empty key
// standing for the segment itself. Otherwise a level-0 segment is the origin of
// its entries; a compacted segment of version 1, which does not know, gives its
// first input in origin-key order (its own key if it names none) and the entry's
// position in it: deterministic, and right for the entries of that input. The
// function returned keeps the last key it made relative: one goroutine calls it.
func originsOf(info SegmentInfo, seg *segment.Segment) func(pos int) Origin {
	self := sessionRelKey(info.Key)
	if os := seg.Meta.Origins; len(os) == len(seg.Entries) {
		// Entries of one origin come in runs (a compacted segment holds its
		// inputs one after the other), so the last key's relative form is kept.
		var last, lastRel string
		return func(pos int) Origin {
			o := os[pos]
			switch {
			case o.Key == "":
				return Origin{Key: self, Pos: int(o.Pos)}
			case o.Key != last:
				last, lastRel = o.Key, sessionRelKey(o.Key)
			}
			return Origin{Key: lastRel, Pos: int(o.Pos)}
		}
	}
	key := self
	if info.Level > 0 {
		for _, in := range seg.Meta.Inputs {
			if in := sessionRelKey(in); key == self || compareOriginKeys(in, key) < 0 {
				key = in
			}
		}
	}
	return func(pos int) Origin { return Origin{Key: key, Pos: pos} }
}

// The merge order, for a MergeResult and a LeanResult alike: entries sorted by
// origin (rankOrigins, originSort), then parents first (topoOrder). The two
// results hold their entries differently; these functions work on numbers and
// leave the entries to them.

// rankOrigins returns the rank of each of the distinct origin keys in
// compareOriginKeys order: rank[k] is the place of keys[k].
func rankOrigins(keys []string) []uint64 {
	byKey := make([]int32, len(keys))
	for k := range byKey {
		byKey[k] = int32(k)
	}
	slices.SortFunc(byKey, func(a, b int32) int { return compareOriginKeys(keys[a], keys[b]) })
	rank := make([]uint64, len(keys))
	for r, k := range byKey {
		rank[k] = uint64(r)
	}
	return rank
}

// originKey is the sort key of an origin whose key has rank rank.
func originKey(rank uint64, pos int) uint64 { return rank<<32 | uint64(uint32(pos)) }

// originSort sorts n items by key (originKey of their origins): sorted[k] is
// the item at place k. It returns nil when the items are in that order already.
func originSort(n int, key func(i int) uint64) (sorted []int32) {
	type item struct {
		key uint64
		i   int32
	}
	items := make([]item, n)
	inOrder := true
	for i := range items {
		items[i] = item{key(i), int32(i)}
		if i > 0 && items[i].key < items[i-1].key {
			inOrder = false
		}
	}
	if inOrder {
		return nil
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.key, b.key) })
	sorted = make([]int32, n)
	for k, it := range items {
		sorted[k] = it.i
	}
	return sorted
}

// topoOrder orders n items sorted by origin parents first; among the items
// whose parents are placed, the one with the earliest origin goes first. par[k]
// is the place of item k's parent, -1 for a root (no parentId, or one that names
// no item or the item itself). Cycles are broken at their earliest item,
// deterministically; cycles counts them. It returns the places in merge order,
// or nil when every parent already comes before its children (what a compacted
// segment or an in-order log holds): each item is then ready when its turn comes
// and is the earliest ready one, so the sorted order is the answer and no heap
// is built.
func topoOrder(par []int32) (order []int32, cycles int) {
	n := len(par)
	inOrder := true
	for k, p := range par {
		if p > int32(k) {
			inOrder = false
			break
		}
	}
	if inOrder {
		return nil, 0
	}
	// Children of each place, in increasing order (CSR layout).
	start := make([]int32, n+1)
	for _, p := range par {
		if p >= 0 {
			start[p+1]++
		}
	}
	for k := range n {
		start[k+1] += start[k]
	}
	kids := make([]int32, start[n])
	fill := slices.Clone(start[:n])
	for k, p := range par {
		if p >= 0 {
			kids[fill[p]] = int32(k)
			fill[p]++
		}
	}
	fill = nil
	ready := &minHeap[int32]{}
	for k, p := range par {
		if p < 0 {
			heap.Push(ready, int32(k))
		}
	}
	order = make([]int32, 0, n)
	placed := make([]bool, n)
	next := 0 // scan position for cycle breaking
	for len(order) < n {
		if ready.Len() == 0 {
			// Everything left waits on a parent that waits on it: a cycle.
			for placed[next] {
				next++
			}
			cycles++
			heap.Push(ready, int32(next))
		}
		k := heap.Pop(ready).(int32)
		if placed[k] {
			continue
		}
		placed[k] = true
		order = append(order, k)
		for _, c := range kids[start[k]:start[k+1]] {
			if !placed[c] {
				heap.Push(ready, c)
			}
		}
	}
	return order, cycles
}

// sortByOrigin sorts entries by origin; moved reports whether it changed their
// order.
func sortByOrigin(entries []Entry) (sorted []Entry, moved bool) {
	// Each entry's number of origin key, looked up once per run of one key
	// (entries of one origin come together).
	num := map[string]int32{}
	var keys []string
	of := make([]int32, len(entries))
	for i, e := range entries {
		if i > 0 && e.Origin.Key == entries[i-1].Origin.Key {
			of[i] = of[i-1]
			continue
		}
		k, ok := num[e.Origin.Key]
		if !ok {
			k = int32(len(keys))
			num[e.Origin.Key] = k
			keys = append(keys, e.Origin.Key)
		}
		of[i] = k
	}
	rank := rankOrigins(keys)
	perm := originSort(len(entries), func(i int) uint64 {
		return originKey(rank[of[i]], entries[i].Origin.Pos)
	})
	if perm == nil {
		return entries, false
	}
	out := make([]Entry, len(entries))
	for k, i := range perm {
		out[k] = entries[i]
	}
	return out, true
}

// parentsFirst puts entries (sorted by origin) in merge order (topoOrder) and
// returns the cycles it broke. byID indexes entries; nil means it builds it.
func parentsFirst(entries []Entry, byID map[string]int) ([]Entry, int) {
	distinct := true // the merge's entries have distinct ids
	if byID == nil {
		byID = make(map[string]int, len(entries))
		for i, e := range entries {
			byID[e.ID] = i
		}
		distinct = len(byID) == len(entries)
	}
	par := make([]int32, len(entries))
	for i := range entries {
		e := &entries[i]
		par[i] = -1
		switch {
		case e.ParentID == "":
		case distinct && i > 0 && entries[i-1].ID == e.ParentID:
			// The common case, a child right after its parent: with distinct
			// ids, byID gives i-1 too.
			par[i] = int32(i - 1)
		default:
			if p, ok := byID[e.ParentID]; ok && p != i {
				par[i] = int32(p)
			}
		}
	}
	order, cycles := topoOrder(par)
	if order == nil {
		return entries, 0
	}
	out := make([]Entry, len(entries))
	for k, i := range order {
		out[k] = entries[i]
	}
	return out, cycles
}

// minHeap is a container/heap of ordered values, smallest first: the merge
// places the ready entry with the smallest merge index next.
type minHeap[T cmp.Ordered] []T

func (h minHeap[T]) Len() int { return len(h) }

func (h minHeap[T]) Less(i, j int) bool { return h[i] < h[j] }

func (h minHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *minHeap[T]) Push(x any) { *h = append(*h, x.(T)) }

func (h *minHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
