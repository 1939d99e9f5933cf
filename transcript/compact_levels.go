package transcript

import (
	"slices"
	"strings"
)

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
// more. It is the loop compactLevels and compactStrictLevels share.
func (st *compactState) eachFullLevel(opts CompactOptions, merge func(live []SegmentInfo) (bool, error)) error {
	if opts.Full {
		all, units := st.liveAll()
		if units < 2 {
			return nil
		}
		_, err := merge(all)
		return err
	}
	for level := 0; level < 255; level++ {
		live, units, maxLevel := st.liveAt(level)
		if level > maxLevel {
			return nil
		}
		if units < opts.MinSegments {
			continue
		}
		if more, err := merge(live); err != nil || !more {
			return err
		}
	}
	return nil
}
