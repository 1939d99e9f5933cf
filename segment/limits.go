package segment

import (
	"fmt"
	"math"
	"time"
)

// The store's limits. Each is defined here once; the SessionTree, the repository,
// `transcript import` and `transcript append` check entries against them when they
// are handed in, so that an entry the store cannot hold is refused at the door with
// an error naming the limit, never accepted locally and then stuck before upload.
//
//   - DefaultMaxEntrySize (64 MiB): the largest entry, its JSON bytes without the
//     newline. It is also the longest line a SessionTree loads.
//   - DefaultMaxSegmentSize (256 MiB): the largest segment, its uncompressed JSONL.
//     It holds at least four entries of the largest size; writers of more than that
//     split their output into several segments.
//   - Entry times: none is refused. Segment metadata records the time range of its
//     entries as int64 Unix nanoseconds, which span 1677-09-21 to 2262-04-11; a
//     time outside that span is recorded at its nearest end (see ClampTime). An
//     entry's own timestamp is kept byte for byte whatever its value.

// CheckEntrySize returns nil when an entry of n bytes (without its newline) fits
// in a segment, and otherwise an error wrapping ErrEntryTooLarge that names the
// limit.
func CheckEntrySize(n int) error {
	if n > DefaultMaxEntrySize {
		return fmt.Errorf("entry of %d bytes exceeds the store's limit of %d bytes (%d MiB, segment.DefaultMaxEntrySize): %w",
			n, DefaultMaxEntrySize, DefaultMaxEntrySize>>20, ErrEntryTooLarge)
	}
	return nil
}

// minMetaNS and maxMetaNS are the ends of the span of times segment metadata
// represents. 0 stands for "unknown", so a clamped time never becomes 0.
const (
	minMetaNS = math.MinInt64
	maxMetaNS = math.MaxInt64
)

// ClampTime returns t, or the nearest end of the span segment metadata can
// represent (1677-09-21T00:12:43.145224192Z .. 2262-04-11T23:47:16.854775807Z)
// when t lies outside it. The zero Time stays zero (unknown).
func ClampTime(t time.Time) time.Time {
	switch {
	case t.IsZero():
		return t
	case t.Before(time.Unix(0, minMetaNS)):
		return time.Unix(0, minMetaNS).UTC()
	case t.After(time.Unix(0, maxMetaNS)):
		return time.Unix(0, maxMetaNS).UTC()
	}
	return t
}

// DefaultTargetSegmentSize is the size, in bytes of uncompressed JSONL, that
// writers aim for when they split a large output (compaction, import, append, the
// mirror): each segment they write holds at most this much, except that an entry
// larger than it gets a segment of its own. Readers still accept segments up to
// DefaultMaxSegmentSize, so segments written before this target existed stay
// readable. Smaller segments bound a writer's and a reader's memory per segment
// and let a large session be fetched in parallel.
const DefaultTargetSegmentSize = 64 << 20 // 64 MiB
