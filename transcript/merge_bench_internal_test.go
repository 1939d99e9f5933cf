package transcript

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/transcriptstore/transcript/segment"
)

// BenchmarkMerge measures the merge alone, on segments already decoded: one
// compacted segment of 10,000 entries with its index (the common open), and
// the same entries in 100 level-0 segments parsed ahead, as ReadAll hands them
// over. Every id is distinct, as in a session nobody wrote twice. In
// level0x100-skewed the segments' key times wrap every 60 segments, as keys of
// replicas whose clocks disagree do: the keys then sort in another order than
// the entries' chain, and the merge has to reorder most entries.
func BenchmarkMerge(b *testing.B) {
	const n = 10000
	raws := make([][]byte, n)
	index := make([]segment.IndexEntry, n)
	parsed := make([]parsedEntry, n)
	for i := range n {
		id, parent := fmt.Sprintf("%08x", i), ""
		if i > 0 {
			parent = fmt.Sprintf("%08x", i-1)
		}
		raws[i] = fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q}`, id, parent)
		index[i] = segment.IndexEntry{Len: uint32(len(raws[i])), ID: id, ParentID: parent}
		parsed[i] = parsedEntry{id: id, parent: parent, typ: "message", ok: true}
	}
	// keyAt names segment i written at minute m, second i%60.
	keyAt := func(level, m, i int) string {
		return fmt.Sprintf("p/a/s/L%d/20260101T00%02d%02d.000000000Z-w-%016x-%016x.jsonl.zst", level, m, i%60, i, i)
	}
	key := func(level, i int) string { return keyAt(level, i/60, i) }
	skewed := func(level, i int) string { return keyAt(level, 0, i) }
	b.Run("compacted", func(b *testing.B) {
		infos := []SegmentInfo{{Key: key(1, 0), Level: 1}}
		segs := []*segment.Segment{{Meta: segment.Meta{Level: 1, Index: index}, Entries: raws}}
		b.ReportAllocs()
		for b.Loop() {
			if res := merge(infos, segs); len(res.Entries) != n {
				b.Fatalf("%d entries", len(res.Entries))
			}
		}
	})
	level0 := func(b *testing.B, key func(level, i int) string) {
		const per = n / 100
		// Segment i holds entries [i*per, (i+1)*per); they are listed in key order.
		listed := make([]int, 100)
		for i := range listed {
			listed[i] = i
		}
		slices.SortFunc(listed, func(a, b int) int { return strings.Compare(key(0, a), key(0, b)) })
		infos := make([]SegmentInfo, 100)
		segs := make([]*segment.Segment, 100)
		for k, i := range listed {
			infos[k] = SegmentInfo{Key: key(0, i)}
			segs[k] = &segment.Segment{Entries: raws[i*per : (i+1)*per]}
		}
		b.ReportAllocs()
		for b.Loop() {
			ahead := make([][]parsedEntry, len(segs))
			for k, i := range listed {
				ahead[k] = parsed[i*per : (i+1)*per]
			}
			if res := mergeParsed(infos, segs, ahead); len(res.Entries) != n {
				b.Fatalf("%d entries", len(res.Entries))
			}
		}
	}
	b.Run("level0x100", func(b *testing.B) { level0(b, key) })
	b.Run("level0x100-skewed", func(b *testing.B) { level0(b, skewed) })
}
