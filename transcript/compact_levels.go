package transcript

import (
	"math"
	"slices"
	"strings"
)

// topLevel is the highest level a segment can be on: its key and its metadata
// hold the level in a byte. A compaction of segments of this level has no level
// to write its output to.
const topLevel = math.MaxUint8

// SkipTopLevel, as CompactResult.Skipped, says that a merge would write above
// the highest level (L255), so the segments it would merge were left as they
// are. A session compacted with Full on every run climbs a level each time; it
// stays readable, and merging level by level still compacts what lies below.
const SkipTopLevel = "its segments to merge are on the highest level, L255: no level is left above them (compact it without --full, or less often with --full)"

// live returns the segments keep selects that nothing supersedes, in listing
// order, and how many units they make (see unit).
func (st *compactState) live(keep func(SegmentInfo) bool) (live []SegmentInfo, units int) {
	seen := map[string]bool{}
	for _, in := range st.infos {
		if _, sup := st.supersededBy(in.Key); keep(in) && !sup {
			live = append(live, in)
			if u := st.unit(in.Key); !seen[u] {
				seen[u] = true
				units++
			}
		}
	}
	return live, units
}

// liveAt returns the segments of level that nothing supersedes, in key order, how
// many units they make (see unit) and the highest level listed.
func (st *compactState) liveAt(level int) (live []SegmentInfo, units, maxLevel int) {
	for _, in := range st.infos {
		maxLevel = max(maxLevel, in.Level)
	}
	live, units = st.live(func(in SegmentInfo) bool { return in.Level == level })
	return live, units, maxLevel
}

// liveAll returns the segments of every level that nothing supersedes, in key
// order, and how many units they make.
func (st *compactState) liveAll() (live []SegmentInfo, units int) {
	live, units = st.live(func(SegmentInfo) bool { return true })
	slices.SortFunc(live, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
	return live, units
}

// eachFullLevel calls merge with the live segments of every level that holds at
// least opts.MinSegments units, lowest first, until merge returns false or an
// error. A level is looked at after merge has run on the one below it, so an
// output counts toward the next level. With opts.Full it calls merge once, with
// the live segments of every level in key order, if they make two units or
// more. A merge whose output would be above topLevel is not made: res.Skipped
// says so (SkipTopLevel). It is the loop compactLevels and compactStrictLevels
// share.
func (st *compactState) eachFullLevel(opts CompactOptions, res *CompactResult, merge func(live []SegmentInfo) (bool, error)) error {
	if opts.Full {
		all, units := st.liveAll()
		if units < 2 {
			return nil
		}
		for _, in := range all {
			if in.Level >= topLevel {
				res.Skipped = SkipTopLevel
				return nil
			}
		}
		_, err := merge(all)
		return err
	}
	for level := 0; level <= topLevel; level++ {
		live, units, maxLevel := st.liveAt(level)
		if level > maxLevel {
			return nil
		}
		if units < opts.MinSegments {
			continue
		}
		if level == topLevel {
			res.Skipped = SkipTopLevel
			return nil
		}
		if more, err := merge(live); err != nil || !more {
			return err
		}
	}
	return nil
}
