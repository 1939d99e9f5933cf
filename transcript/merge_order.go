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
// position in it: deterministic, and right for the entries of that input.
func originsOf(info SegmentInfo, seg *segment.Segment) func(pos int) Origin {
	self := sessionRelKey(info.Key)
	if os := seg.Meta.Origins; len(os) == len(seg.Entries) {
		return func(pos int) Origin {
			o := os[pos]
			if o.Key == "" {
				return Origin{Key: self, Pos: int(o.Pos)}
			}
			return Origin{Key: sessionRelKey(o.Key), Pos: int(o.Pos)}
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

// sortByOrigin sorts entries by origin; moved reports whether it changed their
// order. Entries of one segment share a key, so the keys are ranked once and
// entries sorted by (rank, position).
func sortByOrigin(entries []Entry) (sorted []Entry, moved bool) {
	keys := make([]string, 0, 16)
	rank := map[string]uint64{}
	for _, e := range entries {
		if _, ok := rank[e.Origin.Key]; !ok {
			rank[e.Origin.Key] = 0
			keys = append(keys, e.Origin.Key)
		}
	}
	slices.SortFunc(keys, compareOriginKeys)
	for r, k := range keys {
		rank[k] = uint64(r)
	}
	type item struct {
		key uint64
		i   int
	}
	items := make([]item, len(entries))
	inOrder := true
	for i, e := range entries {
		items[i] = item{rank[e.Origin.Key]<<32 | uint64(uint32(e.Origin.Pos)), i}
		if i > 0 && items[i].key < items[i-1].key {
			inOrder = false
		}
	}
	if inOrder {
		return entries, false
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.key, b.key) })
	out := make([]Entry, len(entries))
	for k, it := range items {
		out[k] = entries[it.i]
	}
	return out, true
}

// topoOrder orders entries (sorted by origin) parents first; among entries whose
// parents are placed, the one with the earliest origin goes first. Entries whose
// parent is unknown are roots. Cycles are broken at their earliest entry,
// deterministically. byID indexes entries; nil means topoOrder builds it.
//
// When every parent already comes before its children (what a compacted segment
// or an in-order log holds), that order is the answer: each entry is ready when
// its turn comes and is the earliest ready one, so entries are returned as given
// and no heap is built.
func topoOrder(entries []Entry, byID map[string]int) ([]Entry, int) {
	n := len(entries)
	if byID == nil {
		byID = make(map[string]int, n)
		for i, e := range entries {
			byID[e.ID] = i
		}
	}
	parents := make([]int, n) // index of the parent, -1 for a root
	inOrder := true
	for i, e := range entries {
		parents[i] = -1
		if p, ok := byID[e.ParentID]; ok && e.ParentID != "" && p != i {
			parents[i] = p
			inOrder = inOrder && p < i
		}
	}
	if inOrder {
		return entries, 0
	}
	children := make([][]int, n)
	pending := make([]int, n) // 1 while the parent is not placed yet
	ready := &minHeap[int]{}
	for i, p := range parents {
		if p >= 0 {
			children[p] = append(children[p], i)
			pending[i] = 1
		} else {
			heap.Push(ready, i)
		}
	}
	out := make([]Entry, 0, n)
	placed := make([]bool, n)
	cycles := 0
	next := 0 // scan position for cycle breaking
	for len(out) < n {
		if ready.Len() == 0 {
			// Everything left waits on a parent that waits on it: a cycle.
			for placed[next] {
				next++
			}
			cycles++
			pending[next] = 0
			heap.Push(ready, next)
		}
		i := heap.Pop(ready).(int)
		if placed[i] {
			continue
		}
		placed[i] = true
		out = append(out, entries[i])
		for _, c := range children[i] {
			if !placed[c] && pending[c] == 1 {
				pending[c] = 0
				heap.Push(ready, c)
			}
		}
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
