package transcript

import (
	"fmt"
	"slices"
)

// HeadName is the object name of a strict session's head, under the session's key
// prefix: {prefix}/{namespace}/{agentId}/{sessionId}/HEAD.json. It is not a
// segment key, so segment listings skip it; Delete removes it with the session.
// Only conditional writes move it: appends (CommitSegment) and the compaction of
// the session (Compact), which replaces the segments it merged by its output.
const HeadName = "HEAD.json"

// Head is the head object of a strict session: the id of its head entry, the
// segments committed so far and the session's Summary, advanced only by
// conditional writes (WriteHead), so that of several writers advancing one head
// exactly one wins. Its JSON (format 2; format 1, without "session", is still
// read) is
//
//	{"format":2,"version":7,"head":"a1b2c3d4",
//	 "segments":["L2/2026...zst","L1/2026...zst","L0/2026...zst",...],
//	 "session":{"created":"2026-...Z","updated":"2026-...Z","cwd":"/work","entries":41}}
//
// version counts the commits (so two commits never have the same bytes, whatever
// an ETag is made of; a compaction keeps it), head is the head entry ("" for
// none) and segments names the committed segments by their keys relative to the
// session ("L0/{name}.jsonl.zst"), so that a copy of the bucket under another
// prefix still reads, in commit order: the compacted segments that hold the
// oldest commits first, then the level-0 segments committed since the last
// compaction. Compaction replaces a run of them by the segment (or group of
// parts) that holds their union, so the head names O(levels) compacted segments
// plus the level-0 segments appended since the compaction job last visited the
// session, not one key per append. A segment the head does not name, and that no
// segment it names holds (as a compaction input), is not committed.
//
// A Head remembers the ETag it was read or written with; the zero Head is a head
// not stored yet.
type Head struct {
	// Version counts the commits.
	Version uint64
	// Entry is the id of the head entry ("" for none).
	Entry string
	// Segments names the committed segments in commit order, relative to the
	// session's key prefix.
	Segments []string
	// Summary is what a list shows of the session, as of this head; nil for a
	// head of format 1, which has none. It is never changed in place: a new
	// Head gets a new Summary.
	Summary *Summary
	// etag is the ETag of the stored object this Head was read or written as.
	etag string
}

// Commit returns the head after committing the segment with key (a full key or
// one relative to the session) with head entry entry and summary sum (nil keeps
// h's). h is unchanged.
func (h Head) Commit(key, entry string, sum *Summary) Head {
	if sum == nil {
		sum = h.Summary
	}
	return Head{
		Version:  h.Version + 1,
		Entry:    entry,
		Segments: append(h.Segments[:len(h.Segments):len(h.Segments)], sessionRelKey(key)),
		Summary:  sum,
		etag:     h.etag,
	}
}

// Commits reports whether h names the segment with key (a full key or one
// relative to the session).
func (h Head) Commits(key string) bool {
	return slices.Contains(h.Segments, sessionRelKey(key))
}

// Same reports whether h and o are the same stored version (ETag and version).
func (h Head) Same(o Head) bool { return h.etag == o.etag && h.Version == o.Version }

// Replace returns the head in which the run of segments inputs (relative or full
// keys, in h's order, one after the other in h) is replaced by outputs, in that
// place: what a compaction commits. Version, Entry and Summary are kept. It fails
// when inputs is not such a run of h (another compaction replaced some of them).
func (h Head) Replace(inputs, outputs []string) (Head, error) {
	if len(inputs) == 0 {
		return h, fmt.Errorf("replace in head: no inputs")
	}
	first := slices.Index(h.Segments, sessionRelKey(inputs[0]))
	if first < 0 || first+len(inputs) > len(h.Segments) {
		return h, fmt.Errorf("replace in head: %s is not committed", sessionRelKey(inputs[0]))
	}
	for i, in := range inputs {
		if h.Segments[first+i] != sessionRelKey(in) {
			return h, fmt.Errorf("replace in head: %s does not follow %s", sessionRelKey(in), h.Segments[first])
		}
	}
	segs := make([]string, 0, len(h.Segments)-len(inputs)+len(outputs))
	segs = append(segs, h.Segments[:first]...)
	for _, out := range outputs {
		segs = append(segs, sessionRelKey(out))
	}
	segs = append(segs, h.Segments[first+len(inputs):]...)
	n := h
	n.Segments = segs
	return n, nil
}

// Committed returns a filter for View that keeps the segments h names.
func (h Head) Committed() func(SegmentInfo) bool {
	set := make(map[string]struct{}, len(h.Segments))
	for _, rel := range h.Segments {
		set[rel] = struct{}{}
	}
	return func(info SegmentInfo) bool {
		_, ok := set[sessionRelKey(info.Key)]
		return ok
	}
}

// Replay returns entries (read from segments h names) in commit order: by the
// position of their segment in h, then by their position in it (an entry of a
// segment h does not name ranks with the first segment's). A compacted segment
// holds its inputs' entries in the order they were committed (Compact merges a
// strict session's segments only when their keys are in commit order), so the
// replay is the same before and after a compaction.
func (h Head) Replay(entries []Entry) []Entry {
	order := make(map[string]int, len(h.Segments))
	for i, rel := range h.Segments {
		order[rel] = i
	}
	out := slices.Clone(entries)
	slices.SortStableFunc(out, func(a, b Entry) int {
		if c := order[sessionRelKey(a.Segment)] - order[sessionRelKey(b.Segment)]; c != 0 {
			return c
		}
		return a.Pos - b.Pos
	})
	return out
}
