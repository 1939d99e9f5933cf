package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// SegmentSet is the set of segments of one session whose entries a reader holds,
// each named relative to its session ("L0/{name}.jsonl.zst", see sessionRelKey), so
// that a set survives a copy of the bucket under another prefix. The zero value is
// the empty set. A SegmentSet is a value: ReadNew returns a new one and never
// changes the one it is given.
//
// Beside the keys, a set returned by ReadNew carries what the next ReadNew needs to
// list incrementally: the newest level-0 key the reader has held (the watermark its
// incremental listings start from, less Reconcile.Margin), how many incremental
// listings followed the last full one, and when that full one ran. A set made by
// NewSegmentSet (or the zero value) has no full listing behind it, so the first
// ReadNew with it lists the whole session.
type SegmentSet struct {
	m map[string]struct{}
	// mark is the relative key of the newest level-0 segment this set or a set it
	// was derived from held; it never moves back (a compaction that deletes held
	// level-0 segments leaves it where it was).
	mark string
	// partial counts the incremental listings since the last full one.
	partial int
	// fullAt is when (Config.Now of the reading store) the last full listing ran;
	// zero: never.
	fullAt time.Time
}

// Reconcile returns the same set with no full listing behind it, so that the next
// ReadNew with it lists the whole session whatever the store's ReconcilePolicy: a
// reader that needs late segments sooner than the policy finds them (a Watch)
// asks for it. The keys are shared, not copied (no set is changed once made).
func (s SegmentSet) Reconcile() SegmentSet {
	s.fullAt, s.partial = time.Time{}, 0
	return s
}

// NewSegmentSet returns the set of the given segment keys (full or relative).
func NewSegmentSet(keys ...string) SegmentSet {
	s := SegmentSet{m: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		rel := sessionRelKey(k)
		s.m[rel] = struct{}{}
		s.mark = newerMark(s.mark, rel)
	}
	return s
}

// newerMark returns the later of mark and rel as a watermark: rel counts only if it
// is a level-0 key.
func newerMark(mark, rel string) string {
	if relLevel(rel) == 0 && rel > mark {
		return rel
	}
	return mark
}

// With returns the set with the segments at keys (full or relative) added, and
// the same listing state: what a writer that stored those segments holds. s is
// unchanged.
func (s SegmentSet) With(keys ...string) SegmentSet {
	n := s
	n.m = make(map[string]struct{}, len(s.m)+len(keys))
	for k := range s.m {
		n.m[k] = struct{}{}
	}
	for _, k := range keys {
		rel := sessionRelKey(k)
		n.m[rel] = struct{}{}
		n.mark = newerMark(n.mark, rel)
	}
	return n
}

// Has reports whether the segment at key (full or relative) is in the set.
func (s SegmentSet) Has(key string) bool {
	_, ok := s.m[sessionRelKey(key)]
	return ok
}

// Len returns the number of segments in the set.
func (s SegmentSet) Len() int { return len(s.m) }

// Keys returns the relative keys of the set in lexical order.
func (s SegmentSet) Keys() []string {
	out := make([]string, 0, len(s.m))
	for k := range s.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Equal reports whether both sets hold the same segments (the listing state they
// carry is not compared).
func (s SegmentSet) Equal(o SegmentSet) bool {
	if len(s.m) != len(o.m) {
		return false
	}
	for k := range s.m {
		if _, ok := o.m[k]; !ok {
			return false
		}
	}
	return true
}

// Collected reports whether every segment of held that now lacks is named as an
// input by a compacted segment of now: a compaction's inputs collected after
// their delete delay, whose entries the reader holds in that compacted segment,
// and not segments gone with their session (Store.Delete, retention). now is
// the set a whole listing left (Increment.Have of a full ReadNew). It reads the
// metadata of now's compacted segments (a ranged GET each) only when some
// segment of held is missing; a reader that finds one unclaimed reads the
// session afresh. A segment collected two compactions ago (its compacted
// segment itself merged and collected since) is unclaimed too: only the
// metadata of segments that exist can be read.
func (s *Store) Collected(ctx context.Context, ref TranscriptRef, held, now SegmentSet) (bool, error) {
	var gone []string
	for k := range held.m {
		if _, ok := now.m[k]; !ok {
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return true, nil
	}
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return false, err
	}
	if !visible {
		return false, fmt.Errorf("session %s: %w", ref, bucket.ErrNotFound)
	}
	sp := sessionPrefix(s.cfg.Prefix, ref)
	claimed := map[string]bool{}
	for _, k := range now.Keys() {
		if relLevel(k) <= 0 {
			continue
		}
		m, err := s.ReadSegmentMeta(ctx, sp+k)
		if errors.Is(err, bucket.ErrNotFound) {
			continue // collected meanwhile: what it claimed is for the next listing
		}
		if err != nil {
			return false, err
		}
		for _, in := range m.Inputs {
			claimed[sessionRelKey(in)] = true
		}
	}
	for _, k := range gone {
		if !claimed[k] {
			return false, nil
		}
	}
	return true, nil
}
