package transcript

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
)

// Conflict reports two different entries that carry the same id. The one first in
// merge order (segment key order, then position) is kept on every replica.
type Conflict struct {
	ID string
	// Kept and Dropped locate the two versions as segment key and position.
	KeptSegment    string
	KeptPos        int
	DroppedSegment string
	DroppedPos     int
}

// CorruptSegment reports a segment that ReadAll skipped (Config.SkipCorrupt).
type CorruptSegment struct {
	Key string
	Err error
}

// MergeResult is the union of a session's segments.
type MergeResult struct {
	// Entries holds every distinct entry once, parents before children, then in
	// segment key order, then by position within the segment.
	Entries []Entry
	// Segments lists the segments that were read, in key order (superseded inputs of
	// a compacted segment are left out).
	Segments []SegmentInfo
	// Conflicts lists ids seen with different bytes.
	Conflicts []Conflict
	// Invalid lists entries that were skipped because they have no usable id.
	Invalid []error
	// Corrupt lists segments skipped for failing verification (Config.SkipCorrupt).
	Corrupt []CorruptSegment
	// Cycles counts parent links that were ignored because they formed a cycle.
	Cycles int
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

// ReadAll reads every segment of ref and union-merges their entries (see MergeResult).
// A session without segments gives an error wrapping ErrNotFound. If a listed segment
// vanishes before it is fetched (a compaction replaced it), ReadAll lists again, at
// most Config.MaxRelists times.
func (s *Store) ReadAll(ctx context.Context, ref TranscriptRef) (*MergeResult, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return nil, err
	}
	if !visible {
		return nil, fmt.Errorf("read %s: %w", ref, ErrNotFound)
	}
	for attempt := 0; ; attempt++ {
		infos, err := s.ListSegments(ctx, ref)
		if err != nil {
			return nil, err
		}
		if len(infos) == 0 {
			return nil, fmt.Errorf("read %s: %w", ref, ErrNotFound)
		}
		segs, corrupt, err := s.fetchSession(ctx, infos)
		if errors.Is(err, ErrNotFound) && attempt < s.cfg.MaxRelists {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		res := merge(infos, segs)
		res.Corrupt = corrupt
		return res, nil
	}
}

// ReadEntries returns the raw entries of ref in merge order; a session that does not
// exist gives none and no error. It lets a SessionTree sync from the store.
func (s *Store) ReadEntries(ctx context.Context, ref TranscriptRef) ([][]byte, error) {
	res, err := s.ReadAll(ctx, ref)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return res.Raw(), nil
}

// fetchSession fetches and decodes a session's segments (infos in key order). The
// compacted segments (level above 0) come first: the inputs they name are superseded
// and not fetched at all, so a compacted session opens with few GETs even while its
// inputs wait out their delete delay. A nil element of the result is a segment
// superseded or (Config.SkipCorrupt) skipped as corrupt.
func (s *Store) fetchSession(ctx context.Context, infos []SegmentInfo) ([]*segment.Segment, []CorruptSegment, error) {
	segs := make([]*segment.Segment, len(infos))
	var upper, lower []int
	for i, in := range infos {
		if in.Level > 0 {
			upper = append(upper, i)
		} else {
			lower = append(lower, i)
		}
	}
	pick := func(idx []int) []SegmentInfo {
		out := make([]SegmentInfo, len(idx))
		for j, i := range idx {
			out[j] = infos[i]
		}
		return out
	}
	var corrupt []CorruptSegment
	if len(upper) > 0 {
		got, c, err := s.fetchAll(ctx, pick(upper), s.cfg.SkipCorrupt)
		if err != nil {
			return nil, nil, err
		}
		corrupt = append(corrupt, c...)
		for j, i := range upper {
			segs[i] = got[j]
		}
		sup := superseders(pick(upper), got)
		lower = slices.DeleteFunc(lower, func(i int) bool {
			_, ok := supersededIn(sup, infos[i])
			return ok
		})
	}
	got, c, err := s.fetchAll(ctx, pick(lower), s.cfg.SkipCorrupt)
	if err != nil {
		return nil, nil, err
	}
	corrupt = append(corrupt, c...)
	for j, i := range lower {
		segs[i] = got[j]
	}
	return segs, corrupt, nil
}

// fetchAll fetches and decodes the segments in parallel (bounded). A nil element of
// the result is a segment skipped as corrupt (only when skipCorrupt is set).
func (s *Store) fetchAll(ctx context.Context, infos []SegmentInfo, skipCorrupt bool) ([]*segment.Segment, []CorruptSegment, error) {
	segs := make([]*segment.Segment, len(infos))
	errs := make([]error, len(infos))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.readLimit(len(infos)))
	for i, info := range infos {
		g.Go(func() error {
			seg, err := s.ReadSegment(gctx, info.Key)
			if err == nil && seg.Meta.Checksum != info.Hash {
				err = fmt.Errorf("read segment %s: %w: key names checksum %016x, segment has %016x",
					info.Key, segment.ErrChecksum, info.Hash, seg.Meta.Checksum)
			}
			if err != nil && skipCorrupt && errors.Is(err, segment.ErrCorrupt) {
				errs[i] = err
				return nil
			}
			segs[i] = seg
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var corrupt []CorruptSegment
	for i, err := range errs {
		if err != nil {
			corrupt = append(corrupt, CorruptSegment{Key: infos[i].Key, Err: err})
		}
	}
	return segs, corrupt, nil
}

// superseders maps the session-relative key (sessionRelKey) of every segment that a
// decoded segment names as an input to the segment naming it; of several, the
// highest level wins, then the first in key order. Only compacted segments (level
// above 0) count: a level-0 segment naming inputs is not what Compact writes.
func superseders(infos []SegmentInfo, segs []*segment.Segment) map[string]SegmentInfo {
	sup := map[string]SegmentInfo{}
	for i, seg := range segs {
		if seg == nil || infos[i].Level == 0 {
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
	by, ok := sup[sessionRelKey(info.Key)]
	return by, ok && by.Level > info.Level
}

// merge computes the union of decoded segments listed in key order.
func merge(infos []SegmentInfo, segs []*segment.Segment) *MergeResult {
	res := &MergeResult{}
	sup := superseders(infos, segs)
	byID := map[string]int{} // id -> index in res.Entries
	for i, seg := range segs {
		if _, ok := supersededIn(sup, infos[i]); seg == nil || ok {
			continue
		}
		res.Segments = append(res.Segments, infos[i])
		for pos, raw := range seg.Entries {
			e, err := parseStoredEntry(raw)
			if err != nil {
				res.Invalid = append(res.Invalid, fmt.Errorf("segment %s entry %d: %w", infos[i].Key, pos, err))
				continue
			}
			e.Segment, e.Pos = infos[i].Key, pos
			if j, ok := byID[e.ID]; ok {
				if kept := res.Entries[j]; !bytes.Equal(kept.Raw, e.Raw) {
					res.Conflicts = append(res.Conflicts, Conflict{ID: e.ID,
						KeptSegment: kept.Segment, KeptPos: kept.Pos, DroppedSegment: e.Segment, DroppedPos: e.Pos})
				}
				continue
			}
			byID[e.ID] = len(res.Entries)
			res.Entries = append(res.Entries, e)
		}
	}
	res.Entries, res.Cycles = topoOrder(res.Entries, byID)
	return res
}

// topoOrder orders entries parents first; among entries whose parents are placed, the
// one earliest in the input (key order, then position) goes first. Entries whose parent
// is unknown are roots. Cycles are broken at their earliest entry, deterministically.
func topoOrder(entries []Entry, byID map[string]int) ([]Entry, int) {
	n := len(entries)
	children := make([][]int, n)
	pending := make([]int, n) // 1 while the parent is not placed yet
	ready := &intHeap{}
	for i, e := range entries {
		if p, ok := byID[e.ParentID]; ok && e.ParentID != "" && p != i {
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

type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
