package transcript

import (
	"context"
	"slices"
	"strings"

	"github.com/transcriptstore/transcript/segment"
)

// readNew plans and runs the fetches of ReadNew over one full listing (infos, in
// key order).
func (s *Store) readNew(ctx context.Context, infos []SegmentInfo, have SegmentSet) (*Increment, error) {
	return s.readNewScoped(ctx, infos, have, "")
}

// readNewScoped plans and runs the fetches of ReadNew over one listing (infos, in
// key order) of the level-0 keys after the relative key after ("": every key) and
// every key of the higher levels. A held key outside that range stays in the set.
func (s *Store) readNewScoped(ctx context.Context, infos []SegmentInfo, have SegmentSet, after string) (*Increment, error) {
	r, err := s.newIncRead(ctx, infos, have, after)
	if err != nil {
		return nil, err
	}
	r.planUpper()
	upperSegs, err := r.fetchUpper(ctx)
	if err != nil {
		return nil, err
	}
	lowerSegs, err := r.fetchLower(ctx)
	if err != nil {
		return nil, err
	}
	r.settleViaInputs()
	return r.increment(append(upperSegs, lowerSegs...)), nil
}

// incRead is the state of one incremental read (readNewScoped).
type incRead struct {
	s     *Store
	infos []SegmentInfo // the listing, in key order
	have  SegmentSet
	after string
	p     planner
	upper []SegmentInfo // the new compacted segments
	// next is the set the reader holds afterwards, by relative key.
	next map[string]struct{}
	// covered are the new segments not fetched because the reader holds their
	// entries; viaInputs the compacted ones held through inputs fetched for them.
	covered   []SegmentInfo
	viaInputs map[string][]string
	// superseded are the relative keys a fetched compacted segment claims.
	superseded map[string]bool
	// wantUpper and wantLower are the segments to fetch, compacted first.
	wantUpper, wantLower []SegmentInfo
	corrupt              []CorruptSegment
}

// newIncRead indexes the listing and reads the metadata frames of the new
// compacted segments (only a reader that holds something can find one covered).
func (s *Store) newIncRead(ctx context.Context, infos []SegmentInfo, have SegmentSet, after string) (*incRead, error) {
	r := &incRead{s: s, infos: infos, have: have, after: after, next: map[string]struct{}{},
		viaInputs: map[string][]string{}, superseded: map[string]bool{}}
	listed := make(map[string]SegmentInfo, len(infos))
	for _, in := range infos {
		rel := sessionRelKey(in.Key)
		listed[rel] = in
		if !have.Has(rel) && in.Level > 0 {
			r.upper = append(r.upper, in)
		}
	}
	var metas map[string]segment.Meta
	if have.Len() > 0 && len(r.upper) > 0 {
		var err error
		if metas, err = s.readMetas(ctx, r.upper); err != nil {
			return nil, err
		}
	}
	r.p = planner{have: have, listed: listed, metas: metas, state: map[string]int8{}}
	for rel := range have.m {
		if _, ok := listed[rel]; ok || after != "" && relLevel(rel) == 0 && rel <= after {
			r.next[rel] = struct{}{}
		}
	}
	return r, nil
}

// planUpper decides, highest level first (a fetched compacted segment makes its
// inputs needless), which new compacted segments are covered, held through
// their inputs, or fetched.
func (r *incRead) planUpper() {
	p := &r.p
	order := slices.Clone(r.upper)
	slices.SortStableFunc(order, func(a, b SegmentInfo) int { return b.Level - a.Level })
	for _, in := range order {
		rel := sessionRelKey(in.Key)
		switch {
		case r.superseded[rel]:
		case p.covered(rel):
			r.covered = append(r.covered, in)
			r.next[rel] = struct{}{}
		case p.cheaperByInputs(rel, r.s.cfg.ReadConcurrency):
			// Its missing inputs are fetched as the new level-0 segments they
			// are; once they are, the reader holds all of it.
			r.viaInputs[rel] = p.inputs(rel)
			r.covered = append(r.covered, in)
			r.next[rel] = struct{}{}
		default:
			r.wantUpper = append(r.wantUpper, in)
			if m := p.metas[rel]; m.Group.IsZero() {
				for _, k := range p.inputs(rel) {
					r.superseded[k] = true
				}
			}
		}
	}
	slices.SortFunc(r.wantUpper, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
}

// fetchUpper fetches the compacted segments planUpper chose and marks what they
// supersede.
func (r *incRead) fetchUpper(ctx context.Context) ([]*segment.Segment, error) {
	segs, corrupt, err := r.s.fetchAll(ctx, r.wantUpper, r.s.cfg.SkipCorrupt)
	if err != nil {
		return nil, err
	}
	r.corrupt = corrupt
	for i, seg := range segs {
		if seg == nil {
			continue // corrupt and skipped: not held, tried again next time
		}
		r.next[sessionRelKey(r.wantUpper[i].Key)] = struct{}{}
		if !seg.Meta.Group.IsZero() {
			// One part of a group holds only some of its inputs' entries, and
			// an increment does not see whether the group is whole: a part
			// excuses no input (every listed input is read, as ReadAll reads
			// them while the group is incomplete).
			continue
		}
		for _, in := range seg.Meta.Inputs {
			if k := sessionRelKey(in); relLevel(k) < r.wantUpper[i].Level {
				r.superseded[k] = true
			}
		}
	}
	return segs, nil
}

// fetchLower fetches the listed segments the reader lacks below the compacted
// ones: new level-0 segments and claimed inputs. The reader rule of
// fetchSession holds here too: a compacted segment's claim to supersede its
// inputs hides nothing that still exists, so a claimed input that is listed and
// not held is fetched as well (its entries collapse with the compacted copy),
// and only a claimed input that fails verification is left to the segment that
// claims it.
func (r *incRead) fetchLower(ctx context.Context) ([]*segment.Segment, error) {
	fetched := make(map[string]bool, len(r.wantUpper))
	for _, in := range r.wantUpper {
		fetched[sessionRelKey(in.Key)] = true
	}
	for _, in := range r.infos {
		rel := sessionRelKey(in.Key)
		switch {
		case r.have.Has(rel), fetched[rel]:
		case r.superseded[rel], in.Level == 0:
			r.wantLower = append(r.wantLower, in)
		}
	}
	segs, bad, err := r.s.fetchAll(ctx, r.wantLower, true)
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		if r.superseded[sessionRelKey(b.Key)] {
			continue
		}
		if !r.s.cfg.SkipCorrupt {
			return nil, b.Err
		}
		r.corrupt = append(r.corrupt, b)
	}
	for i, seg := range segs {
		if seg != nil {
			r.next[sessionRelKey(r.wantLower[i].Key)] = struct{}{}
		}
	}
	return segs, nil
}

// settleViaInputs holds a compacted segment counted as held through inputs
// fetched for it only if every one of them was read (not skipped as corrupt).
func (r *incRead) settleViaInputs() {
	for rel, ins := range r.viaInputs {
		for _, k := range ins {
			if _, ok := r.next[k]; !ok && !r.p.covered(k) {
				delete(r.next, rel)
				r.covered = slices.DeleteFunc(r.covered, func(in SegmentInfo) bool { return sessionRelKey(in.Key) == rel })
				break
			}
		}
	}
}

// increment merges the fetched segments (segs, in the order of wantUpper then
// wantLower) in key order and returns the increment with the new held set.
func (r *incRead) increment(segs []*segment.Segment) *Increment {
	want := append(slices.Clone(r.wantUpper), r.wantLower...)
	idx := make([]int, len(want))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(want[a].Key, want[b].Key) })
	sortedInfos := make([]SegmentInfo, len(idx))
	sortedSegs := make([]*segment.Segment, len(idx))
	for j, i := range idx {
		sortedInfos[j], sortedSegs[j] = want[i], segs[i]
	}
	res := merge(sortedInfos, sortedSegs)
	res.Corrupt = r.corrupt
	slices.SortFunc(r.covered, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
	have := r.have
	inc := &Increment{MergeResult: res, Have: SegmentSet{m: r.next, mark: have.mark}, Listed: len(r.infos), Covered: r.covered, Full: r.after == "",
		whole: r.after == "" && have.Len() == 0}
	for rel := range r.next {
		inc.Have.mark = newerMark(inc.Have.mark, rel)
	}
	if inc.Full {
		inc.Have.fullAt = r.s.cfg.Now()
	} else {
		inc.Have.partial, inc.Have.fullAt = have.partial+1, have.fullAt
	}
	return inc
}
