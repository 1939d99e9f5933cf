package transcript

import (
	"fmt"
	"slices"

	"github.com/transcriptstore/transcript/segment"
)

// Conflict reports two different entries that carry the same id. The version with
// the earliest origin is kept, on every replica and under every compaction.
type Conflict struct {
	ID string
	// Kept and Dropped locate the two versions as read: segment key and position.
	KeptSegment    string
	KeptPos        int
	DroppedSegment string
	DroppedPos     int
	// KeptOrigin and DroppedOrigin are the two versions' origins.
	KeptOrigin, DroppedOrigin Origin
}

// CorruptSegment reports a segment that ReadAll skipped (Config.SkipCorrupt).
type CorruptSegment struct {
	Key string
	Err error
}

// MergeResult is the union of a session's segments.
type MergeResult struct {
	// Entries holds every distinct entry id once (the conflict winner), parents
	// before children, then by origin (see Origin.Compare).
	Entries []Entry
	// Losers holds the versions that lost a conflict, by origin: kept so that
	// compaction loses no bytes that were ever written.
	Losers []Entry
	// Segments lists the segments that were read, in key order (superseded inputs of
	// a compacted segment are left out).
	Segments []SegmentInfo
	// Conflicts lists ids seen with different bytes: one per losing version, by
	// the loser's origin.
	Conflicts []Conflict
	// Invalid lists entries that were skipped because they have no usable id.
	Invalid []error
	// Corrupt lists segments skipped for failing verification (Config.SkipCorrupt).
	Corrupt []CorruptSegment
	// Cycles counts parent links that were ignored because they formed a cycle.
	Cycles int

	orphans bool // some entry's parentId names no entry (see Dangling)
}

// Raw returns the raw bytes of the merged entries in order.
func (r *MergeResult) Raw() [][]byte {
	out := make([][]byte, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = e.Raw
	}
	return out
}

// Dangling returns the entries whose parentId names no entry of the result. A reader
// that sees one met a child whose parent's segment it could not see: a writer
// uploaded out of order, or a segment is missing.
func (r *MergeResult) Dangling() []Entry {
	ids := make(map[string]bool, len(r.Entries))
	for _, e := range r.Entries {
		ids[e.ID] = true
	}
	var out []Entry
	for _, e := range r.Entries {
		if e.ParentID != "" && !ids[e.ParentID] {
			out = append(out, e)
		}
	}
	return out
}

// Missing returns the ids of want that the result lacks, in the order given.
func (r *MergeResult) Missing(want []string) []string {
	ids := make(map[string]bool, len(r.Entries))
	for _, e := range r.Entries {
		ids[e.ID] = true
	}
	var out []string
	for _, id := range want {
		if !ids[id] {
			out = append(out, id)
		}
	}
	return out
}

// superseders maps the session-relative key (sessionRelKey) of every segment that a
// decoded segment names as an input to the segment naming it; of several, the
// highest level wins, then the first in key order. Only compacted segments (level
// above 0) count: a level-0 segment naming inputs is not what Compact writes; and
// of a compaction written as a group of parts, only a whole group (see groupsOf).
func superseders(infos []SegmentInfo, segs []*segment.Segment) map[string]SegmentInfo {
	sup := map[string]SegmentInfo{}
	whole := wholeParts(infos, segs)
	for i, seg := range segs {
		if seg == nil || infos[i].Level == 0 || !whole[i] {
			continue
		}
		for _, in := range seg.Meta.Inputs {
			k := sessionRelKey(in)
			if cur, ok := sup[k]; !ok || infos[i].Level > cur.Level {
				sup[k] = infos[i]
			}
		}
	}
	return sup
}

// supersededIn returns the segment that supersedes info according to sup, if any.
// Only a segment of a higher level supersedes, so compacted segments naming each
// other hide nothing.
func supersededIn(sup map[string]SegmentInfo, info SegmentInfo) (SegmentInfo, bool) {
	if len(sup) == 0 {
		return SegmentInfo{}, false
	}
	by, ok := sup[sessionRelKey(info.Key)]
	return by, ok && by.Level > info.Level
}

// mergeSuperseders is superseders for a merge of segs: with one segment decoded
// (a compacted session, the common open) nothing can be superseded, since only a
// segment of a higher level supersedes, and the inputs it names (a thousand
// for a session compacted from level 0) need no map.
func mergeSuperseders(infos []SegmentInfo, segs []*segment.Segment) map[string]SegmentInfo {
	n := 0
	for _, seg := range segs {
		if seg != nil {
			n++
		}
	}
	if n < 2 {
		return nil
	}
	return superseders(infos, segs)
}

// merge computes the union of decoded segments listed in key order: every entry
// id once, the version with the earliest origin winning, ordered parents first,
// then by origin. The result depends on the set of (entry, origin) pairs only,
// not on which segments hold them or on the listing order.
func merge(infos []SegmentInfo, segs []*segment.Segment) *MergeResult {
	return mergeParsed(infos, segs, nil)
}

// mergeParsed is merge with entries parsed ahead (fetchAllParsed): parsed[i],
// when not nil, holds what parseStoredEntry reads of segment i's entries. The
// records are a third of an Entry's size and each segment's are dropped once
// merged: a session of a million level-0 entries holds about 56 MB of them at the
// start of the merge.
func mergeParsed(infos []SegmentInfo, segs []*segment.Segment, parsed [][]parsedEntry) *MergeResult {
	total := 0
	for _, seg := range segs {
		if seg != nil {
			total += len(seg.Entries)
		}
	}
	// Sized for the common case of distinct ids, so neither grows while merging.
	res := &MergeResult{Entries: make([]Entry, 0, total)}
	sup := mergeSuperseders(infos, segs)
	// id -> index in res.Entries of the current winner: one hash of each id, where
	// a map's lookup then insert took two (5-8% of a compacted open's CPU).
	byID := newIDTable(total)
	idOf := func(i int32) string { return res.Entries[i].ID }
	var others map[string][]Entry // id -> further versions (other bytes), rare
	for i, seg := range segs {
		if seg == nil {
			continue
		}
		// Entries of superseded inputs that were read are merged too (see
		// fetchSession): identical bytes collapse to their earliest origin, so the
		// result does not depend on whether an input is still there. Segments lists
		// only the segments nothing supersedes.
		if _, ok := supersededIn(sup, infos[i]); !ok {
			res.Segments = append(res.Segments, infos[i])
		}
		origin := originsOf(infos[i], seg)
		index, meta := seg.Meta.Index, &seg.Meta
		// Index as a slice is read directly: one IndexAt for both forms measured
		// ~10% slower in BenchmarkMerge/compacted.
		packed := index == nil && meta.HasIndex() // read through Store.PackedReads
		var ahead []parsedEntry
		if parsed != nil {
			ahead, parsed[i] = parsed[i], nil // freed once merged
		}
		for pos, raw := range seg.Entries {
			var e Entry
			var ie segment.IndexEntry // the packed record, read once
			if packed {
				ie = meta.IndexAt(pos)
			}
			switch {
			case index != nil && index[pos].ID != "":
				// The compactor parsed the entry when it wrote the index.
				e = Entry{ID: index[pos].ID, ParentID: index[pos].ParentID, Raw: raw}
			case ie.ID != "":
				e = Entry{ID: ie.ID, ParentID: ie.ParentID, Raw: raw}
			case ahead != nil && ahead[pos].ok:
				p := ahead[pos] // parsed when fetched
				e = Entry{ID: p.id, ParentID: p.parent, Type: p.typ, Time: p.time, Raw: raw}
			default:
				var err error
				if e, err = parseStoredEntry(raw); err != nil {
					res.Invalid = append(res.Invalid, fmt.Errorf("segment %s entry %d: %w", infos[i].Key, pos, err))
					continue
				}
			}
			e.Segment, e.Pos, e.Origin = infos[i].Key, pos, origin(pos)
			if refs := seg.Meta.Refs; refs != nil {
				e.Refs = segment.EntryRefs(refs, uint32(pos))
			}
			j, slot, ok := byID.find(e.ID, idOf)
			if !ok {
				byID.set(slot, int32(len(res.Entries)))
				res.Entries = append(res.Entries, e)
				continue
			}
			if kept := &res.Entries[j]; SameEntry(kept.Raw, kept.Refs, e.Raw, e.Refs) {
				if e.Origin.Compare(kept.Origin) < 0 {
					kept.Origin = e.Origin
				}
				continue
			}
			if others == nil {
				others = map[string][]Entry{}
			}
			vs := others[e.ID]
			k := slices.IndexFunc(vs, func(v Entry) bool { return SameEntry(v.Raw, v.Refs, e.Raw, e.Refs) })
			switch {
			case k < 0:
				others[e.ID] = append(vs, e)
			case e.Origin.Compare(vs[k].Origin) < 0:
				vs[k].Origin = e.Origin
			}
		}
	}
	for id, vs := range others {
		j, _, _ := byID.find(id, idOf)
		for k, v := range vs {
			if v.Origin.Compare(res.Entries[j].Origin) < 0 {
				res.Entries[j], vs[k] = v, res.Entries[j]
			}
		}
		for _, v := range vs {
			w := res.Entries[j]
			res.Losers = append(res.Losers, v)
			res.Conflicts = append(res.Conflicts, Conflict{ID: id, KeptSegment: w.Segment, KeptPos: w.Pos,
				DroppedSegment: v.Segment, DroppedPos: v.Pos, KeptOrigin: w.Origin, DroppedOrigin: v.Origin})
		}
	}
	slices.SortFunc(res.Losers, func(a, b Entry) int { return a.Origin.Compare(b.Origin) })
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return a.DroppedOrigin.Compare(b.DroppedOrigin) })
	res.Entries, res.Cycles, _, res.orphans = mergeOrder(res.Entries, func(id string) (int, bool) {
		j, _, ok := byID.find(id, idOf)
		return int(j), ok
	})
	return res
}

// hasDangling reports whether some entry's parentId names no entry of the
// result (Dangling is not empty), as the merge found.
func (r *MergeResult) hasDangling() bool { return r.orphans }
