package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Increment is what ReadNew found beyond the segments a reader holds.
type Increment struct {
	// MergeResult is the union-merge of the segments that were fetched, in merge
	// order among themselves; it may repeat entries the reader holds already (a
	// compacted segment that had to be fetched holds old entries too), which a
	// reader collapses by id. Segments lists the fetched segments.
	*MergeResult
	// Have is the set the reader holds once it has applied the entries: the
	// segments it held, those fetched, and those found to hold nothing new (a
	// compacted segment whose inputs were all held, the inputs of a fetched
	// compacted segment), restricted to what the listing still shows.
	Have SegmentSet
	// Listed is the number of segments the listing showed.
	Listed int
	// Covered lists the new segments that were not fetched because the reader held
	// everything they contain (compacted segments whose inputs it held, and
	// segments superseded by a fetched compacted one).
	Covered []SegmentInfo
}

// Changed reports whether the increment holds entries or changes the held set.
func (inc *Increment) Changed(have SegmentSet) bool {
	return len(inc.Entries) > 0 || !inc.Have.Equal(have)
}

// ReadNew lists ref and fetches only the segments that are neither in have nor
// superseded by what have holds, so a reader that syncs often pays for what is new,
// not for the length of the session. It assumes nothing about key times: a segment
// that lands late with an old key (an outbox that waited through an outage, a
// writer with a slow clock) is listed, is not in have, and is fetched.
//
// A compacted segment holds exactly the union of its inputs. One that is new to
// the reader is therefore not fetched when every input is held (its metadata frame,
// read with a ranged GET, names them); when only a few small level-0 inputs are
// missing and still listed, those are fetched instead of the whole compacted
// segment; otherwise it is fetched, and so are those of its inputs that are still
// listed (a claim to supersede hides nothing that exists, see fetchSession). A session without
// segments gives an error wrapping ErrNotFound. A listed segment that vanishes
// before it is fetched (compaction removed it) makes ReadNew list again, at most
// Config.MaxRelists times, then it fails with ErrVanished.
func (s *Store) ReadNew(ctx context.Context, ref TranscriptRef, have SegmentSet) (*Increment, error) {
	return readListed(ctx, s, ref, func(infos []SegmentInfo) (*Increment, error) {
		return s.readNew(ctx, infos, have)
	})
}

// readNew plans and runs the fetches of ReadNew over one listing (infos, in key
// order).
func (s *Store) readNew(ctx context.Context, infos []SegmentInfo, have SegmentSet) (*Increment, error) {
	listed := make(map[string]SegmentInfo, len(infos))
	var upper []SegmentInfo // new compacted segments
	for _, in := range infos {
		rel := sessionRelKey(in.Key)
		listed[rel] = in
		if !have.Has(rel) && in.Level > 0 {
			upper = append(upper, in)
		}
	}
	var metas map[string]segment.Meta
	if have.Len() > 0 && len(upper) > 0 {
		// Only a reader that holds something can find a compacted segment covered.
		var err error
		if metas, err = s.readMetas(ctx, upper); err != nil {
			return nil, err
		}
	}
	p := planner{have: have, listed: listed, metas: metas, state: map[string]int8{}}
	next := map[string]struct{}{}
	for rel := range have.m {
		if _, ok := listed[rel]; ok {
			next[rel] = struct{}{}
		}
	}
	var covered, fetchUpper []SegmentInfo
	viaInputs := map[string][]string{} // compacted segment -> the inputs fetched for it
	superseded := map[string]bool{}
	// Highest level first: a fetched compacted segment makes its inputs needless.
	order := slices.Clone(upper)
	slices.SortStableFunc(order, func(a, b SegmentInfo) int { return b.Level - a.Level })
	for _, in := range order {
		rel := sessionRelKey(in.Key)
		switch {
		case superseded[rel]:
		case p.covered(rel):
			covered = append(covered, in)
			next[rel] = struct{}{}
		case p.cheaperByInputs(rel, s.cfg.ReadConcurrency):
			// Its missing inputs are fetched as the new level-0 segments they
			// are; once they are, the reader holds all of it.
			viaInputs[rel] = p.inputs(rel)
			covered = append(covered, in)
			next[rel] = struct{}{}
		default:
			fetchUpper = append(fetchUpper, in)
			for _, k := range p.inputs(rel) {
				superseded[k] = true
			}
		}
	}
	slices.SortFunc(fetchUpper, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
	upperSegs, corrupt, err := s.fetchAll(ctx, fetchUpper, s.cfg.SkipCorrupt)
	if err != nil {
		return nil, err
	}
	for i, seg := range upperSegs {
		if seg == nil {
			continue // corrupt and skipped: not held, tried again next time
		}
		next[sessionRelKey(fetchUpper[i].Key)] = struct{}{}
		for _, in := range seg.Meta.Inputs {
			if k := sessionRelKey(in); relLevel(k) < fetchUpper[i].Level {
				superseded[k] = true
			}
		}
	}
	// The reader rule of fetchSession holds here too: a compacted segment's claim to
	// supersede its inputs hides nothing that still exists, so a claimed input that is
	// listed and not held is fetched as well (its entries collapse with the
	// compacted copy), and only a claimed input that fails verification is left to
	// the segment that claims it.
	fetched := make(map[string]bool, len(fetchUpper))
	for _, in := range fetchUpper {
		fetched[sessionRelKey(in.Key)] = true
	}
	var fetchLower []SegmentInfo
	for _, in := range infos {
		rel := sessionRelKey(in.Key)
		switch {
		case have.Has(rel), fetched[rel]:
		case superseded[rel], in.Level == 0:
			fetchLower = append(fetchLower, in)
		}
	}
	lowerSegs, bad, err := s.fetchAll(ctx, fetchLower, true)
	if err != nil {
		return nil, err
	}
	var c []CorruptSegment
	for _, b := range bad {
		if superseded[sessionRelKey(b.Key)] {
			continue
		}
		if !s.cfg.SkipCorrupt {
			return nil, b.Err
		}
		c = append(c, b)
	}
	corrupt = append(corrupt, c...)
	for i, seg := range lowerSegs {
		if seg != nil {
			next[sessionRelKey(fetchLower[i].Key)] = struct{}{}
		}
	}
	// A compacted segment counted as held through inputs fetched for it is held
	// only if every one of them was read (not skipped as corrupt).
	for rel, ins := range viaInputs {
		for _, k := range ins {
			if _, ok := next[k]; !ok && !p.covered(k) {
				delete(next, rel)
				covered = slices.DeleteFunc(covered, func(in SegmentInfo) bool { return sessionRelKey(in.Key) == rel })
				break
			}
		}
	}
	// Merge what was fetched, in key order.
	want := append(slices.Clone(fetchUpper), fetchLower...)
	segs := append(upperSegs, lowerSegs...)
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
	res.Corrupt = corrupt
	slices.SortFunc(covered, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
	return &Increment{MergeResult: res, Have: SegmentSet{m: next}, Listed: len(infos), Covered: covered}, nil
}

// metaProbe is how many bytes a first ranged read of a segment asks for: enough
// for the metadata frame of a compacted segment naming a few hundred inputs.
const metaProbe = 32 << 10

// readMetas reads the metadata frames of infos (in parallel, bounded), keyed by
// relative key. A segment whose frame cannot be read or verified is left out, so
// that it is fetched whole and the full read reports the problem; a vanished one
// is ErrNotFound.
func (s *Store) readMetas(ctx context.Context, infos []SegmentInfo) (map[string]segment.Meta, error) {
	metas := make([]segment.Meta, len(infos))
	ok := make([]bool, len(infos))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.readLimit(len(infos)))
	for i, in := range infos {
		g.Go(func() error {
			m, err := s.ReadMeta(gctx, in.Key)
			switch {
			case errors.Is(err, ErrNotFound):
				return err
			case err != nil:
				if gctx.Err() != nil {
					return gctx.Err()
				}
				return nil
			case m.Checksum != in.Hash:
				return nil
			}
			metas[i], ok[i] = m, true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[string]segment.Meta, len(infos))
	for i, in := range infos {
		if ok[i] {
			out[sessionRelKey(in.Key)] = metas[i]
		}
	}
	return out, nil
}

// ReadMeta reads and verifies only the metadata frame of the segment at key, with
// ranged reads where the bucket supports them (bucket.RangeReader): usually one
// request for a few hundred bytes.
func (s *Store) ReadMeta(ctx context.Context, key string) (segment.Meta, error) {
	info, err := ParseKey(s.cfg.Prefix, key)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata: %w", err)
	}
	if _, visible, err := s.checkRef(info.Ref); err != nil || !visible {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, ErrNotFound)
	}
	head, err := bucket.ReadRange(ctx, s.cfg.Bucket, key, 0, metaProbe)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
	}
	n, err := segment.MetaSize(head)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
	}
	if n > len(head) && len(head) == metaProbe {
		rest, err := bucket.ReadRange(ctx, s.cfg.Bucket, key, int64(len(head)), int64(n-len(head)))
		if err != nil {
			return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
		}
		head = append(head, rest...)
	}
	m, _, err := s.dec.ReadMeta(head)
	if err != nil {
		return segment.Meta{}, fmt.Errorf("read metadata of %s: %w", key, err)
	}
	return m, nil
}

// MaxAdaptiveReadConcurrency bounds the parallel fetches of one read when
// Config.ReadConcurrency is zero.
const MaxAdaptiveReadConcurrency = 64

// readLimit is how many of n segments one read fetches at once: Config.ReadConcurrency
// when set; otherwise DefaultReadConcurrency, raised to one fetch per 2 segments
// for larger sessions (up to MaxAdaptiveReadConcurrency). A read of small segments
// waits on request latency, not bandwidth: a session of 100 segments takes two
// rounds of GETs instead of nine, one of 1,000 segments 16 instead of 125.
func (s *Store) readLimit(n int) int {
	if !s.adaptiveReads {
		return s.cfg.ReadConcurrency
	}
	return min(MaxAdaptiveReadConcurrency, max(DefaultReadConcurrency, n/2))
}
