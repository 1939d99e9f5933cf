package transcript

import (
	"strings"
	"time"
)

// Origin locates where an entry was first stored: the key of the level-0
// segment that first held it, relative to its session ("L0/{name}.jsonl.zst"),
// and its position there. Compacted segments record the origin of every entry
// they hold (segment format version 2), so an entry keeps its origin whatever
// compaction does with it.
type Origin struct {
	// Key is the level-0 segment's key relative to the session.
	Key string
	// Pos is the entry's position in that segment.
	Pos int
}

// Compare orders origins: by key (see compareOriginKeys), then by position. It
// is the order of the merge among entries whose parents are placed, and the
// order that decides a conflict (the earliest origin wins).
func (o Origin) Compare(p Origin) int {
	if c := compareOriginKeys(o.Key, p.Key); c != 0 {
		return c
	}
	return o.Pos - p.Pos
}

// compareOriginKeys orders session-relative segment keys by their file name,
// "{time}-{writerId}-{seq}-{hash}.jsonl.zst", so by key time first (the writer's
// hybrid logical clock: causal order), then writer, sequence and hash; the level
// element only breaks a tie (origin keys are level 0 but for version 1
// fallbacks).
func compareOriginKeys(a, b string) int {
	an, bn := a[strings.IndexByte(a, '/')+1:], b[strings.IndexByte(b, '/')+1:]
	if c := strings.Compare(an, bn); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// Time returns the key time of the origin's segment: when the entry was first
// stored, by its writer's clock (zero for a key that does not parse).
func (o Origin) Time() time.Time {
	t, err := relKeyTime(o.Key)
	if err != nil {
		return time.Time{}
	}
	return t
}
