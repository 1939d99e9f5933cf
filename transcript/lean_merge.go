package transcript

import (
	"bytes"
	"cmp"
	"container/heap"
	"fmt"
	"slices"

	"github.com/transcriptstore/transcript/segment"
)

// leanVersion is a version of an id that lost to, or may replace, the current
// winner (rare: one id with other bytes).
type leanVersion struct {
	seg, pos   int32
	okey, opos uint32
	parent     string
	parsed     bool // id and parentId were parsed (no entry index): Entry.Time is set
}

// leanMerge is merge (see there for the rules) over a lean representation; its
// result holds the same entries in the same order.
func leanMerge(infos []SegmentInfo, segs []*segment.Segment) *LeanResult {
	res := &LeanResult{keys: make([]string, len(infos)), bodies: make([][][]byte, len(infos))}
	sup := superseders(infos, segs)
	okeyNum := map[string]uint32{}
	intern := func(k string) uint32 {
		n, ok := okeyNum[k]
		if !ok {
			n = uint32(len(res.okeys))
			okeyNum[k] = n
			res.okeys = append(res.okeys, k)
		}
		return n
	}
	total := 0
	for _, seg := range segs {
		if seg != nil {
			total += len(seg.Entries)
		}
	}
	// Sized for every entry once: growing them would hold two copies at a time.
	byID := make(map[string]int32, total)
	parents := make([]string, 0, total) // parentId of each item
	res.items = make([]leanItem, 0, total)
	var others map[string][]leanVersion // id -> further versions, rare
	less := func(ak, ap, bk, bp uint32) bool {
		return Origin{Key: res.okeys[ak], Pos: int(ap)}.Compare(Origin{Key: res.okeys[bk], Pos: int(bp)}) < 0
	}
	for i, seg := range segs {
		res.keys[i] = infos[i].Key
		if seg == nil {
			continue
		}
		if _, ok := supersededIn(sup, infos[i]); !ok {
			res.Segments = append(res.Segments, infos[i])
		}
		res.bodies[i] = seg.Entries
		res.held = append(res.held, infos[i].Key)
		origin := originsOf(infos[i], seg)
		index := seg.Meta.Index
		for pos, raw := range seg.Entries {
			id, parent, parsed, err := storedIDs(index, pos, raw)
			if err != nil {
				res.Invalid = append(res.Invalid, fmt.Errorf("segment %s entry %d: %w", infos[i].Key, pos, err))
				continue
			}
			o := origin(pos)
			v := leanVersion{seg: int32(i), pos: int32(pos), okey: intern(o.Key), opos: uint32(o.Pos), parent: parent, parsed: parsed}
			j, ok := byID[id]
			if !ok {
				byID[id] = int32(len(res.items))
				res.items = append(res.items, leanItem{id: id, seg: v.seg, pos: v.pos, okey: v.okey, opos: v.opos, parsed: parsed})
				parents = append(parents, parent)
				continue
			}
			kept := &res.items[j]
			if bytes.Equal(res.bodies[kept.seg][kept.pos], raw) {
				if less(v.okey, v.opos, kept.okey, kept.opos) {
					kept.okey, kept.opos = v.okey, v.opos
				}
				continue
			}
			if others == nil {
				others = map[string][]leanVersion{}
			}
			vs := others[id]
			k := slices.IndexFunc(vs, func(w leanVersion) bool { return bytes.Equal(res.bodies[w.seg][w.pos], raw) })
			switch {
			case k < 0:
				others[id] = append(vs, v)
			case less(v.okey, v.opos, vs[k].okey, vs[k].opos):
				vs[k].okey, vs[k].opos = v.okey, v.opos
			}
		}
		// The index is no longer needed; the origins were read into the items.
		seg.Meta.Index, seg.Meta.Origins = nil, nil
	}
	entryOf := func(id string, v leanVersion) Entry {
		e := Entry{ID: id, ParentID: v.parent, Raw: res.bodies[v.seg][v.pos], Segment: res.keys[v.seg],
			Pos: int(v.pos), Origin: Origin{Key: res.okeys[v.okey], Pos: int(v.opos)}}
		if v.parsed {
			p, _ := parseStoredEntry(e.Raw)
			e.Time = p.Time
		}
		return e
	}
	for id, vs := range others {
		j := byID[id]
		it := &res.items[j]
		for k, v := range vs {
			if less(v.okey, v.opos, it.okey, it.opos) {
				cur := leanVersion{seg: it.seg, pos: it.pos, okey: it.okey, opos: it.opos, parent: parents[j], parsed: it.parsed}
				it.seg, it.pos, it.okey, it.opos, it.parsed, parents[j] = v.seg, v.pos, v.okey, v.opos, v.parsed, v.parent
				vs[k] = cur
			}
		}
		w := entryOf(id, leanVersion{seg: it.seg, pos: it.pos, okey: it.okey, opos: it.opos, parent: parents[j], parsed: it.parsed})
		for _, v := range vs {
			l := entryOf(id, v)
			res.Losers = append(res.Losers, l)
			res.Conflicts = append(res.Conflicts, Conflict{ID: id, KeptSegment: w.Segment, KeptPos: w.Pos,
				DroppedSegment: l.Segment, DroppedPos: l.Pos, KeptOrigin: w.Origin, DroppedOrigin: l.Origin})
		}
	}
	slices.SortFunc(res.Losers, func(a, b Entry) int { return a.Origin.Compare(b.Origin) })
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return a.DroppedOrigin.Compare(b.DroppedOrigin) })
	res.leanOrder(byID, parents)
	return res
}

// storedIDs returns the id and parentId of the entry at pos of a segment: from
// its entry index when it has one, otherwise parsed (parseStoredEntry).
func storedIDs(index []segment.IndexEntry, pos int, raw []byte) (id, parent string, parsed bool, err error) {
	if index != nil && index[pos].ID != "" {
		return index[pos].ID, index[pos].ParentID, false, nil
	}
	e, err := parseStoredEntry(raw)
	return e.ID, e.ParentID, true, err
}

// leanOrder puts the items in merge order (sortByOrigin, then topoOrder, as
// merge does), resolves their parents to indexes and keeps byID for lookups.
func (r *LeanResult) leanOrder(byID map[string]int32, parents []string) {
	n := len(r.items)
	// Rank the origin keys once; sort by (rank, position) like sortByOrigin.
	ranked := make([]uint32, len(r.okeys))
	for k := range ranked {
		ranked[k] = uint32(k)
	}
	slices.SortFunc(ranked, func(a, b uint32) int { return compareOriginKeys(r.okeys[a], r.okeys[b]) })
	rank := make([]uint64, len(r.okeys))
	for rk, k := range ranked {
		rank[k] = uint64(rk)
	}
	type item struct {
		key uint64
		i   int32
	}
	sorted := make([]item, n)
	inOrder := true
	for i := range r.items {
		it := &r.items[i]
		sorted[i] = item{rank[it.okey]<<32 | uint64(it.opos), int32(i)}
		if i > 0 && sorted[i].key < sorted[i-1].key {
			inOrder = false
		}
	}
	if !inOrder {
		slices.SortFunc(sorted, func(a, b item) int { return cmp.Compare(a.key, b.key) })
	}
	// perm[k] is the item at sorted position k; at[i] the sorted position of item i.
	at := make([]int32, n)
	for k, s := range sorted {
		at[s.i] = int32(k)
	}
	// Parent of each sorted position, -1 for a root (as topoOrder decides).
	par := make([]int32, n)
	ordered := true // every parent before its child: the sorted order is the merge order
	for k, s := range sorted {
		par[k] = -1
		pid := parents[s.i]
		if p, ok := byID[pid]; ok && pid != "" && at[p] != int32(k) {
			par[k] = at[p]
			if par[k] > int32(k) {
				ordered = false
			}
		}
	}
	at = nil
	var order []int32 // merge order as sorted positions
	if ordered {
		// topoOrder places the smallest ready position first, and every position
		// is ready once the ones before it are placed.
		order = make([]int32, n)
		for k := range order {
			order[k] = int32(k)
		}
	} else {
		order, r.Cycles = leanTopo(par)
	}
	// Put the items in merge order in place, parents as merge-order indexes.
	final := make([]int32, n) // sorted position -> merge-order index
	for m, k := range order {
		final[k] = int32(m)
	}
	dest := order // item number -> merge-order index, reusing order's memory
	for k, s := range sorted {
		dest[s.i] = final[k]
		p := int32(-1)
		if par[k] >= 0 {
			p = final[par[k]]
		}
		r.items[s.i].parent = p
		if pid := parents[s.i]; pid != "" && p < 0 {
			if r.oddParents == nil {
				r.oddParents = map[int32]string{}
			}
			r.oddParents[final[k]] = pid
		}
	}
	sorted, par, final = nil, nil, nil
	for i := range r.items {
		for int(dest[i]) != i {
			j := dest[i]
			r.items[i], r.items[j] = r.items[j], r.items[i]
			dest[i], dest[j] = dest[j], j
		}
	}
	for m := range r.items {
		byID[r.items[m].id] = int32(m)
	}
	r.byID = byID
}

// leanTopo is topoOrder over positions 0..n-1 with the parent of each (-1 for a
// root): parents first, the smallest ready position next, cycles broken at their
// smallest position. It returns the positions in order and the cycles broken.
func leanTopo(par []int32) ([]int32, int) {
	n := len(par)
	// Children of each position, in increasing order (CSR layout).
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
	out := make([]int32, 0, n)
	placed := make([]bool, n)
	cycles, next := 0, 0
	for len(out) < n {
		if ready.Len() == 0 {
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
		out = append(out, k)
		for _, c := range kids[start[k]:start[k+1]] {
			if !placed[c] {
				heap.Push(ready, c)
			}
		}
	}
	return out, cycles
}
