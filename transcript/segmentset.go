package transcript

import (
	"slices"
)

// SegmentSet is the set of segments of one session whose entries a reader holds,
// each named relative to its session ("L0/{name}.jsonl.zst", see sessionRelKey), so
// that a set survives a copy of the bucket under another prefix. The zero value is
// the empty set. A SegmentSet is a value: ReadNew returns a new one and never
// changes the one it is given.
type SegmentSet struct {
	m map[string]struct{}
}

// NewSegmentSet returns the set of the given segment keys (full or relative).
func NewSegmentSet(keys ...string) SegmentSet {
	s := SegmentSet{m: make(map[string]struct{}, len(keys))}
	for _, k := range keys {
		s.m[sessionRelKey(k)] = struct{}{}
	}
	return s
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

// Equal reports whether both sets hold the same segments.
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
