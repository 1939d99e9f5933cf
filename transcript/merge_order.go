package transcript

import (
	"cmp"
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
	if m := &seg.Meta; m.HasOrigins() && (m.Origins == nil || len(m.Origins) == len(seg.Entries)) {
		// Entries of one origin come in runs (a compacted segment holds its
		// inputs one after the other), so the last key's relative form is kept.
		var last, lastRel string
		return func(pos int) Origin {
			o := m.OriginAt(pos)
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
			ready.push(int32(k))
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
			ready.push(int32(next))
		}
		k := ready.pop()
		if placed[k] {
			continue
		}
		placed[k] = true
		order = append(order, k)
		for _, c := range kids[start[k]:start[k+1]] {
			if !placed[c] {
				ready.push(c)
			}
		}
	}
	return order, cycles
}

// mergeOrder returns entries in merge order, sorted by origin (rankOrigins,
// originSort) and then parents first (topoOrder), the parent cycles it broke,
// and whether some entry's parentId names no entry (dangling). byID, when not
// nil, finds the index in entries of every id, whose ids are then distinct
// (what the merge builds); nil means mergeOrder indexes the
// ids itself, the last of equal ids in origin order standing for them. entries
// is not modified: moved is false when it is in merge order already and
// returned as is; otherwise the result is a new slice, made once whatever the
// two orders moved.
func mergeOrder(entries []Entry, byID func(id string) (int, bool)) (ordered []Entry, cycles int, moved, dangling bool) {
	n := len(entries)
	// Each entry's number of origin key, looked up once per run of one key
	// (entries of one origin come together).
	num := map[string]int32{}
	var keys []string
	of := make([]int32, n)
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
	sorted := originSort(n, func(i int) uint64 { return originKey(rank[of[i]], entries[i].Origin.Pos) })
	of, rank = nil, nil
	// at(k) is the index in entries of the entry at sorted place k; place[i]
	// the sorted place of entries[i] (nil when both are the identity).
	at := func(k int) int { return k }
	var place []int32
	if sorted != nil {
		at = func(k int) int { return int(sorted[k]) }
		place = make([]int32, n)
		for k, i := range sorted {
			place[i] = int32(k)
		}
	}
	distinct, byPlace := true, false
	if byID == nil {
		places := make(map[string]int, n)
		for k := range n {
			places[entries[at(k)].ID] = k
		}
		distinct, byPlace = len(places) == n, true
		byID = func(id string) (int, bool) { k, ok := places[id]; return k, ok }
	}
	// par[k] is the sorted place of the parent of the entry at place k, -1 for
	// a root (no parentId, or one that names no entry or the entry itself).
	par := make([]int32, n)
	for k := range n {
		e := &entries[at(k)]
		par[k] = -1
		switch {
		case e.ParentID == "":
		case distinct && k > 0 && entries[at(k-1)].ID == e.ParentID:
			// The common case, a child right after its parent: with distinct
			// ids, byID gives place k-1 too.
			par[k] = int32(k - 1)
		default:
			p, ok := byID(e.ParentID)
			dangling = dangling || !ok
			if ok && !byPlace && place != nil {
				p = int(place[p])
			}
			if ok && p != k {
				par[k] = int32(p)
			}
		}
	}
	place = nil
	order, cycles := topoOrder(par)
	if sorted == nil && order == nil {
		return entries, 0, false, dangling
	}
	ordered = make([]Entry, n)
	for m := range ordered {
		k := m
		if order != nil {
			k = int(order[m])
		}
		ordered[m] = entries[at(k)]
	}
	return ordered, cycles, true, dangling
}

// minHeap is a binary heap of ordered values, smallest first: the merge places
// the ready entry with the smallest merge index next. Its methods are typed, so
// that a push does not box its value into an interface (container/heap would
// allocate for each int32 past 255).
type minHeap[T cmp.Ordered] []T

func (h minHeap[T]) Len() int { return len(h) }

// push adds x.
func (h *minHeap[T]) push(x T) {
	*h = append(*h, x)
	a := *h
	for j := len(a) - 1; j > 0; {
		i := (j - 1) / 2
		if a[i] <= a[j] {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

// pop removes and returns the smallest value; the heap must not be empty.
func (h *minHeap[T]) pop() T {
	a := *h
	n := len(a) - 1
	x := a[0]
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if j+1 < n && a[j+1] < a[j] {
			j++
		}
		if a[i] <= a[j] {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
	*h = a
	return x
}
