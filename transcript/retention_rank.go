package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// level0Rel begins the key of a level-0 segment relative to its session (an
// input or an origin of a compacted segment: "L0/{name}.jsonl.zst").
const level0Rel = "L0/"

// rankCandidate is a compacted segment that may hold a session's newest write:
// its key and bound, the earlier of its LastModified and its key time (both the
// compaction's, not its entries').
type rankCandidate struct {
	key   string
	bound time.Time
}

// rankPlan is what keep-last's ranking of one session needs beyond its
// listing: base, the newest of the earlier of LastModified and key time over
// its level-0 segments, and the compacted segments whose bound is later than
// base, latest bound first.
type rankPlan struct {
	base  time.Time
	cands []rankCandidate
}

// planRank returns the rank plan of a session's listing.
func planRank(ls sessionListing) rankPlan {
	var p rankPlan
	for _, in := range ls.infos {
		w := earlier(ls.stored[in.Key], in.Time)
		if in.Level == 0 {
			p.base = later(p.base, w)
			continue
		}
		p.cands = append(p.cands, rankCandidate{key: in.Key, bound: w})
	}
	p.cands = slices.DeleteFunc(p.cands, func(c rankCandidate) bool { return !c.bound.After(p.base) })
	slices.SortFunc(p.cands, func(a, b rankCandidate) int { return b.bound.Compare(a.bound) })
	return p
}

// written returns when the session was last written: the newest, over its
// segments, of the earlier of LastModified and key time, where a compacted
// segment's time is moreover no later than the newest key time of the
// level-0 segments whose writes it holds (newestOrigin), read from its
// metadata frame. It reads the compacted segments latest bound
// first, and stops at the first whose bound is no later than what it has:
// usually one ranged GET, none when a level-0 segment is the newest.
func (p rankPlan) written(ctx context.Context, s *Store) (time.Time, int, error) {
	w, reads := p.base, 0
	for _, c := range p.cands {
		if !c.bound.After(w) {
			break
		}
		m, err := s.ReadSegmentMeta(ctx, c.key)
		reads++
		switch {
		case errors.Is(err, bucket.ErrNotFound):
			// Collected since the listing: rank it as listed (no earlier).
			w = c.bound
			continue
		case err != nil:
			return time.Time{}, reads, fmt.Errorf("rank for keep-last: %w", err)
		}
		w = later(w, earlier(c.bound, newestOrigin(m, c.bound)))
	}
	return w, reads, nil
}

// newestOrigin returns the newest key time of the level-0 segments whose
// writes m holds, or def when none parses: of its entries' origins and of its
// level-0 inputs (an input whose entries all repeat earlier ones, a resend,
// keeps no origin but was a write, and counted as one before the compaction).
// The inputs of a higher level are compactions, whose key times are not
// writes', but for a version 1 segment, which records no origins, whose inputs
// count all the same (no later than the segment itself).
func newestOrigin(m segment.Meta, def time.Time) time.Time {
	var t time.Time
	origins := m.HasOrigins() // either form (segment.Decoder.PackedIndex)
	if origins {
		for i := range int(m.EntryCount) {
			t = later(t, Origin{Key: m.OriginAt(i).Key}.Time())
		}
	}
	for _, in := range m.Inputs {
		if origins && !strings.HasPrefix(in, level0Rel) {
			continue
		}
		if it, err := relKeyTime(in); err == nil {
			t = later(t, it)
		}
	}
	if t.IsZero() {
		return def
	}
	return t
}

// rankByWrites sets the written time of each item of plans, parallel at a
// time, from its rank plan, and the metadata frames it read for it
// (retainItem.rankReads). A read that fails sets the item's rankErr (see
// settleRankErrors) and does not stop the others; rankByWrites reports whether
// one did.
func (s *Store) rankByWrites(ctx context.Context, plans map[*retainItem]rankPlan, parallel int) bool {
	var g errgroup.Group
	g.SetLimit(max(1, parallel))
	var failed atomic.Bool
	for it, p := range plans {
		g.Go(func() error {
			w, n, err := p.written(ctx, s)
			it.rankReads = n
			if err != nil {
				it.rankErr = err
				failed.Store(true)
				return nil
			}
			it.written = w
			return nil
		})
	}
	_ = g.Wait() // the goroutines return nil
	return failed.Load()
}

// settleRankErrors decides what the failed ranking of an agent's sessions
// leaves undecided, after decideRetention ran without keep-last (max-age
// alone): a wrong rank would select another session, so keep-last selects
// nothing this run. A session whose read failed fails; so does one with a
// mark of ours that nothing but keep-last may still select (not held, not
// written since it, not selected by max-age), so that its mark stays, neither
// released nor acted on, until a run ranks the agent again.
func settleRankErrors(items []*retainItem, agent string) {
	for _, it := range items {
		switch {
		case it.err != nil:
		case it.rankErr != nil:
			it.err = it.rankErr
		case it.marked && !it.held && len(it.unseen) == 0 && it.reason == "":
			it.err = fmt.Errorf("%w: keep-last could not rank agent %s this run (a compacted segment's metadata was not read): the mark stays", errRankUnknown, agent)
		}
	}
}

// errRankUnknown is wrapped by the error of a marked session left undecided
// because keep-last could not rank its agent.
var errRankUnknown = errors.New("rank unknown")

// rankedCount returns how many of items keep-last ranks: those with a segment.
func rankedCount(items []*retainItem) int {
	n := 0
	for _, it := range items {
		if it.segments > 0 {
			n++
		}
	}
	return n
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
