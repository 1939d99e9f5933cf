package transcript

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ReadCommitted reads what a reader holding have lacks of strict session ref as
// its head h commits it, without listing the session: the head names every
// committed segment, so a first read of a compacted session costs the GETs of the
// segments it names (one, once the compaction job merged them all) after the GET
// of the head, and a reader that holds everything a head names fetches nothing.
//
// A named compacted segment whose inputs the reader holds (its metadata frame,
// read with a ranged GET, names them) is not fetched; when only a few level-0
// inputs of it are missing and they still exist, those are fetched instead of
// it. The entries of the fetched segments are union-merged among themselves
// (Increment.Entries); a reader collapses them with what it holds by id.
// Increment.Have is the set of the segments h names, the reader's held set once
// it has applied the increment.
//
// A named segment that is gone (a compaction replaced it and deleted it after its
// delete delay) makes ReadCommitted read the head again and start over from the
// newer head, at most Config.MaxRelists times (then the error wraps ErrVanished);
// it returns the head it read from. A segment that is gone while the head still
// names it is missing: it is listed in Increment.Missing and the rest is read (the
// session is damaged; package repository refuses its appends).
func (s *Store) ReadCommitted(ctx context.Context, ref TranscriptRef, h Head, have SegmentSet) (Head, *Increment, error) {
	return readFromHead(ctx, s, ref, h, "transcript.ReadCommitted", func(ctx context.Context, ref TranscriptRef, h Head) (Head, *Increment, error) {
		return s.readCommittedHeads(ctx, ref, h, have)
	})
}

// readFromHead is what ReadCommitted and ReadLeanCommitted share: it checks
// ref, runs read (a read of what head h commits, which returns the head it
// read from) as one traced task, and puts the payloads back (readResolved).
func readFromHead[T asStored](ctx context.Context, s *Store, ref TranscriptRef, h Head, task string, read func(context.Context, TranscriptRef, Head) (Head, T, error)) (Head, T, error) {
	ctx, t := trace.NewTask(ctx, task)
	defer t.End()
	var zero T
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return h, zero, err
	}
	if !visible {
		return h, zero, fmt.Errorf("read %s: %w", ref, bucket.ErrNotFound)
	}
	res, err := readResolved(ctx, s, ref, func() (T, error) {
		var res T
		var err error
		h, res, err = read(ctx, ref, h)
		return res, err
	})
	if err != nil {
		return h, zero, err
	}
	return h, res, nil
}

// readCommittedHeads is ReadCommitted with the entries as stored: it reads from
// h, and from a newer head each time a segment h names is gone, and returns the
// head it read from.
func (s *Store) readCommittedHeads(ctx context.Context, ref TranscriptRef, h Head, have SegmentSet) (Head, *Increment, error) {
	var inc *Increment
	var gone []string
	h, missing, err := s.fromHeads(ctx, ref, h, func(h Head) (bool, error) {
		var err error
		inc, gone, err = s.readCommittedOnce(ctx, ref, h, have)
		return len(gone) > 0, err
	})
	if err != nil {
		return h, nil, err
	}
	if missing {
		inc.Missing = gone
	}
	return h, inc, nil
}

// fromHeads makes attempts at reading strict session ref from its head: once
// reads what head h commits and reports whether a segment h names is gone.
// Then the head is read again: a newer one (a compaction replaced the segment
// and deleted it after its delete delay) gets another attempt, at most
// Config.MaxRelists in all (then the error wraps ErrVanished); while h is still
// the head, the segment is missing (missing is set, and the caller says what
// that means for its read). It returns the head the last attempt read from. An
// error of once is wrapped; one of reading the head (gone too: the session was
// deleted) is returned as is.
func (s *Store) fromHeads(ctx context.Context, ref TranscriptRef, h Head, once func(Head) (gone bool, err error)) (_ Head, missing bool, _ error) {
	for attempt := 0; ; attempt++ {
		gone, err := once(h)
		if err != nil {
			return h, false, fmt.Errorf("read %s: %w", ref, err)
		}
		if !gone {
			return h, false, nil
		}
		cur, err := s.ReadHead(ctx, ref)
		if err != nil {
			return h, false, err
		}
		if cur.Same(h) {
			return h, true, nil
		}
		if attempt >= s.cfg.MaxRelists {
			return h, false, fmt.Errorf("read %s: %w (%d heads)", ref, ErrVanished, attempt+1)
		}
		h = cur
	}
}

// committedRead is the state of one attempt of ReadCommitted.
type committedRead struct {
	s       *Store
	ref     TranscriptRef
	have    SegmentSet
	next    map[string]struct{} // what the reader holds afterwards
	metas   map[string]segment.Meta
	gone    []string
	via     map[string]string // input read in place of the compacted segment named (nil: none)
	infos   []SegmentInfo     // fetched, with segs
	segs    []*segment.Segment
	parsed  [][]parsedEntry // of segs, parsed while other GETs were in flight
	corrupt []CorruptSegment
}

// readCommittedOnce reads the segments h names that have lacks. gone lists the
// named segments that do not exist (then the increment is not complete).
func (s *Store) readCommittedOnce(ctx context.Context, ref TranscriptRef, h Head, have SegmentSet) (*Increment, []string, error) {
	r := &committedRead{s: s, ref: ref, have: have, next: map[string]struct{}{}, metas: map[string]segment.Meta{}}
	var want, upper []SegmentInfo
	for _, rel := range h.Segments {
		if have.Has(rel) {
			r.next[rel] = struct{}{}
			continue
		}
		info, err := ParseKey(s.cfg.Prefix, s.sessionKey(ref, rel))
		if err != nil {
			return nil, nil, fmt.Errorf("%w: head names %q: %w", ErrInvalidHead, rel, err)
		}
		if info.Level > 0 && have.Len() > 0 {
			upper = append(upper, info)
		} else {
			want = append(want, info)
		}
	}
	fetchUpper, via, err := r.planUpper(ctx, upper)
	if err != nil {
		return nil, nil, err
	}
	if err := r.fetchVia(ctx, via); err != nil {
		return nil, nil, err
	}
	if _, err := r.fetch(ctx, append(want, fetchUpper...), false); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(r.gone, strings.Compare)
	idx := make([]int, len(r.infos))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(r.infos[a].Key, r.infos[b].Key) })
	infos, segs, parsed := make([]SegmentInfo, len(idx)), make([]*segment.Segment, len(idx)), make([][]parsedEntry, len(idx))
	for j, i := range idx {
		infos[j], segs[j], parsed[j] = r.infos[i], r.segs[i], r.parsed[i]
	}
	res := mergeParsed(infos, segs, parsed)
	res.Corrupt = r.corrupt
	inc := &Increment{MergeResult: res, Have: SegmentSet{m: r.next}, Listed: len(h.Segments), Full: true, Via: r.via}
	for rel := range r.next {
		inc.Have.mark = newerMark(inc.Have.mark, rel)
	}
	return inc, r.gone, nil
}

// planUpper decides, for the named compacted segments the reader lacks, which it
// holds through their inputs, which are cheaper read as the few level-0 inputs
// it lacks (via, by the compacted segment), and which are fetched (returned).
func (r *committedRead) planUpper(ctx context.Context, upper []SegmentInfo) ([]SegmentInfo, []viaInputs, error) {
	if len(upper) == 0 {
		return nil, nil, nil
	}
	if err := r.readMetas(ctx, upper); err != nil {
		return nil, nil, err
	}
	var out []SegmentInfo
	var via []viaInputs
	for _, in := range upper {
		rel := sessionRelKey(in.Key)
		m, ok := r.metas[rel]
		switch {
		case !ok:
			out = append(out, in) // gone or unreadable: fetch says which
		case r.covered(ctx, m, 0):
			r.next[rel] = struct{}{}
		default:
			if lacking := r.lackingInputs(m); lacking != nil {
				via = append(via, viaInputs{out: in, ins: lacking})
			} else {
				out = append(out, in)
			}
		}
	}
	return out, via, nil
}

// lackingInputs returns the inputs of the compacted segment with metadata m that
// the reader lacks, when they are all level-0 segments, at most one round of
// parallel fetches, and m is not one part of a group; otherwise nil.
func (r *committedRead) lackingInputs(m segment.Meta) []SegmentInfo {
	if !m.Group.IsZero() {
		return nil
	}
	var out []SegmentInfo
	for _, in := range m.Inputs {
		k := sessionRelKey(in)
		if r.have.Has(k) {
			continue
		}
		info, err := ParseKey(r.s.cfg.Prefix, r.s.sessionKey(r.ref, k))
		if err != nil || info.Level != 0 || len(out) == r.s.cfg.ReadConcurrency {
			return nil
		}
		out = append(out, info)
	}
	return out
}

// viaInputs is a compacted segment the reader lacks (out) and its level-0
// inputs it reads in its place (ins).
type viaInputs struct {
	out SegmentInfo
	ins []SegmentInfo
}

// fetchVia reads the lacking inputs of the compacted segments of via; a
// compacted segment one of whose inputs is gone (deleted after the compaction) is
// fetched itself instead.
func (r *committedRead) fetchVia(ctx context.Context, via []viaInputs) error {
	if len(via) == 0 {
		return nil
	}
	var inputs []SegmentInfo
	r.via = make(map[string]string)
	for _, v := range via {
		inputs = append(inputs, v.ins...)
		for _, in := range v.ins {
			r.via[sessionRelKey(in.Key)] = sessionRelKey(v.out.Key)
		}
	}
	got, err := r.fetch(ctx, inputs, true)
	if err != nil {
		return err
	}
	var whole []SegmentInfo
	for _, v := range via {
		if slices.ContainsFunc(v.ins, func(in SegmentInfo) bool { return !got[in.Key] }) {
			whole = append(whole, v.out)
			continue
		}
		r.next[sessionRelKey(v.out.Key)] = struct{}{}
	}
	slices.SortFunc(whole, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
	_, err = r.fetch(ctx, whole, false)
	return err
}

// maxCoverDepth bounds how many levels of compacted inputs covered follows.
const maxCoverDepth = 4

// covered reports whether the reader holds every input of the compacted segment
// with metadata m: each is held, or is a compacted segment whose own inputs are
// (read as far as maxCoverDepth levels down; a gone one is not covered).
func (r *committedRead) covered(ctx context.Context, m segment.Meta, depth int) bool {
	if len(m.Inputs) == 0 || !m.Group.IsZero() && depth > 0 {
		return false
	}
	for _, in := range m.Inputs {
		k := sessionRelKey(in)
		if r.have.Has(k) {
			continue
		}
		if relLevel(k) == 0 || depth >= maxCoverDepth {
			return false
		}
		sub, err := r.s.ReadSegmentMeta(ctx, r.s.sessionKey(r.ref, k))
		if err != nil || !r.covered(ctx, sub, depth+1) {
			return false
		}
	}
	return true
}

// readMetas reads the metadata frames of infos into r.metas; a segment that is
// gone or whose frame fails verification is left out (it is fetched whole, and
// the fetch reports it).
func (r *committedRead) readMetas(ctx context.Context, infos []SegmentInfo) error {
	metas := make([]segment.Meta, len(infos))
	ok := make([]bool, len(infos))
	err := r.s.eachMeta(ctx, infos, func(ctx context.Context, i int, m segment.Meta, err error) error {
		switch {
		case err == nil && KeyChecksum(m) == infos[i].Hash:
			metas[i], ok[i] = m, true
		case err != nil && !errors.Is(err, bucket.ErrNotFound) && !errors.Is(err, segment.ErrCorrupt):
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, in := range infos {
		if ok[i] {
			r.metas[sessionRelKey(in.Key)] = metas[i]
		}
	}
	return nil
}

// fetch reads infos, ReadConcurrency at a time, and reports which it read. A
// segment that is gone is noted in r.gone (unless inputs is set: then it is only
// not read); one that fails verification is skipped and reported when the store
// skips corrupt segments (Config.SkipCorrupt), and fails the read otherwise. What
// it read goes to r.infos and r.segs; only a segment the head names joins r.next.
func (r *committedRead) fetch(ctx context.Context, infos []SegmentInfo, inputs bool) (map[string]bool, error) {
	segs := make([]*segment.Segment, len(infos))
	parsed := make([][]parsedEntry, len(infos))
	errs := make([]error, len(infos))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.s.readLimit(len(infos)))
	for i, in := range infos {
		g.Go(func() error {
			seg, err := r.s.readListedSegment(gctx, in.Key)
			if err == nil && KeyChecksum(seg.Meta) != in.Hash {
				err = fmt.Errorf("read segment %s: %w: key names checksum %016x, segment has %016x",
					in.Key, segment.ErrChecksum, in.Hash, KeyChecksum(seg.Meta))
			}
			if err == nil && !seg.Meta.HasIndex() {
				// Parsed here, while other GETs are in flight, rather than after
				// the last one (as fetchAllParsed does for ReadAll).
				parsed[i] = parseEntries(seg.Entries)
			}
			switch {
			case errors.Is(err, bucket.ErrNotFound), err != nil && errors.Is(err, segment.ErrCorrupt) && (inputs || r.s.cfg.SkipCorrupt):
				errs[i] = err
				return nil
			case err != nil:
				return err
			}
			segs[i] = seg
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	got := make(map[string]bool, len(infos))
	for i, in := range infos {
		rel := sessionRelKey(in.Key)
		switch err := errs[i]; {
		case err != nil && inputs:
		case errors.Is(err, bucket.ErrNotFound):
			r.gone = append(r.gone, rel)
		case err != nil:
			r.corrupt = append(r.corrupt, CorruptSegment{Key: in.Key, Err: err})
		default:
			got[in.Key] = true
			if !inputs {
				r.next[rel] = struct{}{}
			}
			r.infos, r.segs, r.parsed = append(r.infos, in), append(r.segs, segs[i]), append(r.parsed, parsed[i])
		}
	}
	return got, nil
}
