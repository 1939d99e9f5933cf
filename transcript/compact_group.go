package transcript

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/segment"
)

// A compaction whose merged output is larger than the target segment size
// (CompactOptions.TargetSegmentSize) writes it as a group of parts of one level
// (segment.Group): every part names all the inputs and holds a run of the merged
// entries. A group's claim over its inputs counts only when the group is whole: all
// of its parts are listed, decoded and agree on the group (level, part count,
// inputs). A partial group (a crash between two part PUTs, or a forged part) hides
// nothing and excuses nothing; its parts are ordinary segments of their level,
// merged into the next level like any other.

// segGroup is the compacted segments of one listing that form one group; a
// compacted segment without group metadata is a group of one.
type segGroup struct {
	id    string
	level int
	// parts holds the listed and decoded parts by part number (a zero Key: missing).
	parts []SegmentInfo
	// segs holds the decoded parts, like parts.
	segs   []*segment.Segment
	inputs []string // the inputs the first part names, relative to the session
	// broken marks parts that disagree (on level, part count or inputs) or repeat a
	// part number: the group is never whole.
	broken bool
}

// whole reports whether every part of g is listed and decoded, and they agree.
func (g *segGroup) whole() bool {
	if g.broken {
		return false
	}
	for _, p := range g.parts {
		if p.Key == "" {
			return false
		}
	}
	return true
}

// missing returns the part numbers of g that are not listed or failed to decode.
func (g *segGroup) missing() []int {
	var m []int
	for i, p := range g.parts {
		if p.Key == "" {
			m = append(m, i)
		}
	}
	return m
}

// groupID returns the id under which seg (at info) groups with its fellow parts,
// and its part number and part count. Ids of real groups and of single segments
// live in separate spaces, so no group can pose as a single segment.
func groupID(info SegmentInfo, seg *segment.Segment) (string, int, int) {
	g := seg.Meta.Group
	if g.IsZero() {
		return "k:" + sessionRelKey(info.Key), 0, 1
	}
	return "g:" + g.ID, int(g.Part), int(g.Parts)
}

// groupsOf collects the compacted segments among infos (segs decoded, nil for one
// that could not be read) into their groups, in key order of their first part.
func groupsOf(infos []SegmentInfo, segs []*segment.Segment) []*segGroup {
	byID := map[string]*segGroup{}
	var out []*segGroup
	for i, seg := range segs {
		if seg == nil || infos[i].Level == 0 {
			continue
		}
		id, part, parts := groupID(infos[i], seg)
		g := byID[id]
		if g == nil {
			g = &segGroup{id: id, level: infos[i].Level, parts: make([]SegmentInfo, parts),
				segs: make([]*segment.Segment, parts), inputs: seg.Meta.Inputs}
			byID[id] = g
			out = append(out, g)
		}
		switch {
		case g.level != infos[i].Level || len(g.parts) != parts || !slices.Equal(g.inputs, seg.Meta.Inputs):
			g.broken = true
		case g.parts[part].Key != "":
			g.broken = true
		default:
			g.parts[part], g.segs[part] = infos[i], seg
		}
	}
	return out
}

// wholeParts reports, for every element of segs, whether it is a compacted segment
// whose group is whole in this listing (a segment without group metadata always
// is).
func wholeParts(infos []SegmentInfo, segs []*segment.Segment) []bool {
	ok := make([]bool, len(segs))
	at := make(map[string]int, len(infos))
	for i, in := range infos {
		at[in.Key] = i
	}
	for _, g := range groupsOf(infos, segs) {
		if !g.whole() {
			continue
		}
		for _, p := range g.parts {
			ok[at[p.Key]] = true
		}
	}
	return ok
}

// newGroupID returns a fresh group id for a compaction by writer w: the writer's id
// and 8 random bytes, so runs of one writer id never share a group.
func newGroupID(w *Writer) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("group id: %w", err)
	}
	return w.ID() + "-" + hex.EncodeToString(b[:]), nil
}

// entrySet is a set of stored entries, kept by reference to the decoded segments'
// bytes (hashed, compared byte for byte on lookup, with their payload
// references), so that checking a large group costs no copy of its entries.
type entrySet struct {
	byHash map[uint64][]storedEntry
	segs   []*segment.Segment
	refs   bool                     // some entry holds a payload by reference
	byID   map[string][]storedEntry // built when a lookup by hash fails and refs is set
}

// storedEntry is an entry as a segment stores it.
type storedEntry struct {
	raw  []byte
	refs []segment.PayloadRef
}

// has reports whether the set holds the entry raw (with references refs) as
// written: the same bytes and references, or, when either side holds payloads by
// reference, an entry of the same id that is the same as written (SameEntry: one
// copy kept a payload inline that the other took out).
func (s *entrySet) has(raw []byte, refs []segment.PayloadRef) bool {
	for _, e := range s.byHash[xxhash.Sum64(raw)] {
		if bytes.Equal(e.raw, raw) && sameRefs(e.refs, refs) {
			return true
		}
	}
	if !s.refs && len(refs) == 0 {
		return false
	}
	if s.byID == nil {
		s.byID = map[string][]storedEntry{}
		for _, seg := range s.segs {
			for pos, e := range seg.Entries {
				if id, _, _, err := storedIDs(&seg.Meta, pos, e); err == nil {
					s.byID[id] = append(s.byID[id], storedEntry{e, segment.EntryRefs(seg.Meta.Refs, uint32(pos))})
				}
			}
		}
	}
	id, _, _, err := storedIDs(nil, 0, raw)
	if err != nil {
		return false
	}
	for _, e := range s.byID[id] {
		if SameEntry(e.raw, e.refs, raw, refs) {
			return true
		}
	}
	return false
}

// groupEntries returns the stored entries of segs (the decoded parts of a group)
// as one set.
func groupEntries(segs []*segment.Segment) *entrySet {
	n := 0
	var parts []*segment.Segment
	for _, seg := range segs {
		if seg != nil {
			n += len(seg.Entries)
			parts = append(parts, seg)
		}
	}
	have := &entrySet{byHash: make(map[uint64][]storedEntry, n), segs: parts}
	for _, seg := range parts {
		have.refs = have.refs || seg.Meta.Refs != nil
		for pos, raw := range seg.Entries {
			h := xxhash.Sum64(raw)
			have.byHash[h] = append(have.byHash[h], storedEntry{raw, segment.EntryRefs(seg.Meta.Refs, uint32(pos))})
		}
	}
	return have
}

// IncompleteGroup reports a compaction output group of which some parts are not
// listed or could not be read. Its claim over its inputs hides and excuses nothing;
// Compact deletes none of them on its word.
type IncompleteGroup struct {
	// Group is the group's id; Level the level of its parts.
	Group string
	Level int
	// Parts is how many parts the group declares; Present the keys of the parts
	// found, in part order.
	Parts   int
	Present []string
	// Missing lists the part numbers not found (or not readable); Broken reports
	// parts that disagree on the group or repeat a part number.
	Missing []int
	Broken  bool
}

// Error names the group and its missing parts.
func (g *IncompleteGroup) Error() string {
	what := fmt.Sprintf("missing part(s) %v", g.Missing)
	if g.Broken {
		what = "parts that disagree on the group"
	}
	return fmt.Sprintf("compaction group %s (level %d, %d parts) is incomplete: %s; present: %s",
		g.Group, g.Level, g.Parts, what, strings.Join(g.Present, ", "))
}

// IncompleteGroups returns the output groups among infos (segs decoded, one per
// element of infos, nil for one that could not be read) that are not whole.
func IncompleteGroups(infos []SegmentInfo, segs []*segment.Segment) []*IncompleteGroup {
	var out []*IncompleteGroup
	for _, g := range groupsOf(infos, segs) {
		if g.whole() {
			continue
		}
		ig := &IncompleteGroup{Group: strings.TrimPrefix(g.id, "g:"), Level: g.level, Parts: len(g.parts),
			Missing: g.missing(), Broken: g.broken}
		for _, p := range g.parts {
			if p.Key != "" {
				ig.Present = append(ig.Present, p.Key)
			}
		}
		out = append(out, ig)
	}
	return out
}
