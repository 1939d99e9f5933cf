package transcript

import (
	"fmt"
	"slices"
	"strings"

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
	m := newLeanMerger(infos, segs)
	sup := mergeSuperseders(infos, segs)
	for i, seg := range segs {
		m.res.keys[i] = infos[i].Key
		if seg != nil {
			m.addSegment(i, infos[i], seg, sup)
		}
	}
	m.resolveConflicts()
	m.resolveParents()
	res := m.res
	slices.SortFunc(res.Losers, func(a, b Entry) int { return a.Origin.Compare(b.Origin) })
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return a.DroppedOrigin.Compare(b.DroppedOrigin) })
	res.leanOrder(m.pending)
	return res
}

// leanMerger is the state of one leanMerge. While it merges, the parent of an
// item (leanItem.parent) is the item number of the entry its parentId names, or
// -1: an item whose parentId names no item yet keeps it in pending (rare: a
// parent stored after its child, or none at all), so that a session's parentIds
// are not held as strings beside its ids.
type leanMerger struct {
	res     *LeanResult
	okeyNum map[string]uint32        // origin key -> its number in res.okeys
	pending map[int32]string         // item -> its parentId, naming no item (yet)
	others  map[string][]leanVersion // id -> further versions, rare
}

func newLeanMerger(infos []SegmentInfo, segs []*segment.Segment) *leanMerger {
	total := 0
	for _, seg := range segs {
		if seg != nil {
			total += len(seg.Entries)
		}
	}
	// Sized for every entry once: growing them would hold two copies at a time.
	return &leanMerger{
		res: &LeanResult{keys: make([]string, len(infos)), bodies: make([][][]byte, len(infos)),
			refs: make([][]segment.PayloadRef, len(infos)), items: make([]leanItem, 0, total), ids: newIDTable(total)},
		okeyNum: map[string]uint32{},
	}
}

// setParent makes pid the parentId of item j: the item it names, or pending.
func (m *leanMerger) setParent(j int32, pid string) {
	delete(m.pending, j)
	it := &m.res.items[j]
	it.parent = -1
	if pid == "" {
		return
	}
	if p, _, ok := m.res.ids.find(pid, m.res.itemID); ok {
		it.parent = p
		return
	}
	if m.pending == nil {
		m.pending = map[int32]string{}
	}
	m.pending[j] = strings.Clone(pid) // not a slice of a segment's metadata (see addSegment)
}

// parentID returns the parentId of item j ("" for none).
func (m *leanMerger) parentID(j int32) string {
	if p := m.res.items[j].parent; p >= 0 {
		return m.res.items[p].id
	}
	return m.pending[j]
}

// resolveParents resolves the pending parentIds that name an item merged after
// theirs; those left name no item of the session.
func (m *leanMerger) resolveParents() {
	for j, pid := range m.pending {
		if p, _, ok := m.res.ids.find(pid, m.res.itemID); ok {
			m.res.items[j].parent = p
			delete(m.pending, j)
		}
	}
}

// intern returns the number of origin key k in res.okeys, adding it if new.
func (m *leanMerger) intern(k string) uint32 {
	n, ok := m.okeyNum[k]
	if !ok {
		k = strings.Clone(k) // a slice of a segment's metadata (see addSegment)
		n = uint32(len(m.res.okeys))
		m.okeyNum[k] = n
		m.res.okeys = append(m.res.okeys, k)
	}
	return n
}

// earlier reports whether origin (ak, ap) comes before (bk, bp) (Origin.Compare).
func (m *leanMerger) earlier(ak, ap, bk, bp uint32) bool {
	return Origin{Key: m.res.okeys[ak], Pos: int(ap)}.Compare(Origin{Key: m.res.okeys[bk], Pos: int(bp)}) < 0
}

// addSegment merges the entries of segment i (listed as info; sup maps what
// compacted segments supersede).
func (m *leanMerger) addSegment(i int, info SegmentInfo, seg *segment.Segment, sup map[string]SegmentInfo) {
	res := m.res
	if _, ok := supersededIn(sup, info); !ok {
		res.Segments = append(res.Segments, info)
	}
	res.bodies[i] = seg.Entries
	res.refs[i] = seg.Meta.Refs
	res.held = append(res.held, info.Key)
	origin := originsOf(info, seg)
	// The index's ids are slices of the string that holds the whole of the
	// segment's metadata extension (parent ids, origins and all, some 32 bytes an
	// entry): the items keep copies, one after the other in one string, so that
	// the extension goes once the segment is merged. A Builder never changes the
	// bytes it wrote, so each id is a slice of what it held so far; sized once,
	// it never moves them.
	var ids strings.Builder
	ids.Grow(indexIDBytes(&seg.Meta))
	for pos, raw := range seg.Entries {
		id, parent, parsed, err := storedIDs(&seg.Meta, pos, raw)
		if err != nil {
			res.Invalid = append(res.Invalid, fmt.Errorf("segment %s entry %d: %w", info.Key, pos, err))
			continue
		}
		if !parsed {
			at := ids.Len()
			ids.WriteString(id)
			id = ids.String()[at:]
		}
		o := origin(pos)
		m.add(id, leanVersion{seg: int32(i), pos: int32(pos), okey: m.intern(o.Key), opos: uint32(o.Pos), parent: parent, parsed: parsed})
	}
	// The index is no longer needed; the origins were read into the items.
	seg.Meta.DropIndex()
}

// indexIDBytes returns the bytes of all ids of the entry index of m (0 without one).
func indexIDBytes(m *segment.Meta) int {
	size := 0
	if m.HasIndex() {
		for i := range int(m.EntryCount) {
			size += len(m.IndexAt(i).ID)
		}
	}
	return size
}

// add merges one version v of entry id: a new id becomes an item,
// the same bytes again keep the earlier origin, other bytes are kept aside for
// resolveConflicts.
func (m *leanMerger) add(id string, v leanVersion) {
	res := m.res
	j, slot, ok := res.ids.find(id, res.itemID)
	if !ok {
		j = int32(len(res.items))
		res.ids.set(slot, j)
		res.items = append(res.items, leanItem{id: id, seg: v.seg, pos: v.pos, okey: v.okey, opos: v.opos, parsed: v.parsed})
		m.setParent(j, v.parent)
		return
	}
	kept := &res.items[j]
	if m.same(kept.seg, kept.pos, v.seg, v.pos) {
		if m.earlier(v.okey, v.opos, kept.okey, kept.opos) {
			kept.okey, kept.opos = v.okey, v.opos
		}
		return
	}
	if m.others == nil {
		m.others = map[string][]leanVersion{}
	}
	v.parent = strings.Clone(v.parent) // as pending's (setParent)
	vs := m.others[id]
	k := slices.IndexFunc(vs, func(w leanVersion) bool { return m.same(w.seg, w.pos, v.seg, v.pos) })
	switch {
	case k < 0:
		m.others[id] = append(vs, v)
	case m.earlier(v.okey, v.opos, vs[k].okey, vs[k].opos):
		vs[k].okey, vs[k].opos = v.okey, v.opos
	}
}

// same reports whether the entries at (aSeg, aPos) and (bSeg, bPos) are one entry
// as written (SameEntry).
func (m *leanMerger) same(aSeg, aPos, bSeg, bPos int32) bool {
	r := m.res
	return SameEntry(r.bodies[aSeg][aPos], r.entryRefs(aSeg, aPos), r.bodies[bSeg][bPos], r.entryRefs(bSeg, bPos))
}

// resolveConflicts makes the version of each conflicting id with the earliest
// origin the winner and reports the others as losers and conflicts.
func (m *leanMerger) resolveConflicts() {
	res := m.res
	for id, vs := range m.others {
		j, _, _ := res.ids.find(id, res.itemID)
		it := &res.items[j]
		for k, v := range vs {
			if m.earlier(v.okey, v.opos, it.okey, it.opos) {
				cur := leanVersion{seg: it.seg, pos: it.pos, okey: it.okey, opos: it.opos, parent: m.parentID(j), parsed: it.parsed}
				it.seg, it.pos, it.okey, it.opos, it.parsed = v.seg, v.pos, v.okey, v.opos, v.parsed
				m.setParent(j, v.parent)
				vs[k] = cur
			}
		}
		w := m.entryOf(id, leanVersion{seg: it.seg, pos: it.pos, okey: it.okey, opos: it.opos, parent: m.parentID(j), parsed: it.parsed})
		for _, v := range vs {
			l := m.entryOf(id, v)
			res.Losers = append(res.Losers, l)
			res.Conflicts = append(res.Conflicts, Conflict{ID: id, KeptSegment: w.Segment, KeptPos: w.Pos,
				DroppedSegment: l.Segment, DroppedPos: l.Pos, KeptOrigin: w.Origin, DroppedOrigin: l.Origin})
		}
	}
}

// entryOf returns version v of entry id as an Entry.
func (m *leanMerger) entryOf(id string, v leanVersion) Entry {
	res := m.res
	e := Entry{ID: id, ParentID: v.parent, Raw: res.bodies[v.seg][v.pos], Segment: res.keys[v.seg],
		Pos: int(v.pos), Origin: Origin{Key: res.okeys[v.okey], Pos: int(v.opos)}, Refs: res.entryRefs(v.seg, v.pos)}
	if v.parsed {
		p, _ := parseStoredEntry(e.Raw)
		e.Time, e.Type = p.Time, p.Type
	}
	return e
}

// storedIDs returns the id and parentId of the entry at pos of a segment
// (metadata m, nil for none): from its entry index when it has one, otherwise
// parsed (parseStoredEntry).
func storedIDs(m *segment.Meta, pos int, raw []byte) (id, parent string, parsed bool, err error) {
	if m != nil && m.HasIndex() {
		if ie := m.IndexAt(pos); ie.ID != "" {
			return ie.ID, ie.ParentID, false, nil
		}
	}
	e, err := parseStoredEntry(raw)
	return e.ID, e.ParentID, true, err
}

// leanOrder puts the items in merge order (rankOrigins, originSort and
// topoOrder, as merge orders entries), turns their parents (item numbers, see
// leanMerger; pending holds the parentIds that name no item) into merge
// indexes and fills the id table for lookups.
func (r *LeanResult) leanOrder(pending map[int32]string) {
	n := len(r.items)
	rank := rankOrigins(r.okeys)
	sorted := originSort(n, func(i int) uint64 { return originKey(rank[r.items[i].okey], int(r.items[i].opos)) })
	rank = nil
	if sorted == nil {
		sorted = make([]int32, n)
		for k := range sorted {
			sorted[k] = int32(k)
		}
	}
	// at[i] is the sorted place of item i; par[k] the place of the parent of the
	// item at place k, -1 for a root (as mergeOrder decides).
	at := make([]int32, n)
	for k, i := range sorted {
		at[i] = int32(k)
	}
	par := make([]int32, n)
	for k, i := range sorted {
		par[k] = -1
		if p := r.items[i].parent; p >= 0 && at[p] != int32(k) {
			par[k] = at[p]
		}
	}
	at = nil
	order, cycles := topoOrder(par)
	r.Cycles = cycles
	if order == nil {
		order = make([]int32, n)
		for k := range order {
			order[k] = int32(k)
		}
	}
	r.place(sorted, par, order, pending)
	r.ids.reset()
	for m := range r.items {
		_, slot, _ := r.ids.find(r.items[m].id, r.itemID)
		r.ids.set(slot, int32(m))
	}
}

// place moves the items into merge order in place: sorted[k] is the item at
// sorted place k, par[k] the place of its parent, order the places in merge
// order. An item's parent becomes its parent's merge index; a parentId that
// names no item (in pending) or the item itself is kept in oddParents.
func (r *LeanResult) place(sorted, par, order []int32, pending map[int32]string) {
	n := len(r.items)
	final := make([]int32, n) // sorted place -> merge index
	for m, k := range order {
		final[k] = int32(m)
	}
	dest := order // item number -> merge index, reusing order's memory
	for k, i := range sorted {
		dest[i] = final[k]
		p := int32(-1)
		if par[k] >= 0 {
			p = final[par[k]]
		}
		pid := pending[i]
		if old := r.items[i].parent; old >= 0 {
			pid = r.items[old].id
		}
		r.items[i].parent = p
		if pid != "" && p < 0 {
			if r.oddParents == nil {
				r.oddParents = map[int32]string{}
			}
			r.oddParents[final[k]] = pid
		}
	}
	for i := range r.items {
		for int(dest[i]) != i {
			j := dest[i]
			r.items[i], r.items[j] = r.items[j], r.items[i]
			dest[i], dest[j] = dest[j], j
		}
	}
}
