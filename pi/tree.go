package pi

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Index maps an entry id to the index of its first entry in a slice of entries.
// A session's rules read entries through one.
type Index map[string]int

// NewIndex indexes entries by id; of duplicate ids the first one counts.
func NewIndex(entries []Entry) Index {
	idx := make(Index, len(entries))
	for i, e := range entries {
		if _, dup := idx[e.id]; !dup {
			idx[e.id] = i
		}
	}
	return idx
}

// LeafMove is what one entry does to the active leaf when it is appended.
type LeafMove uint8

// The moves of LeafMoveOf.
const (
	// MoveTo makes the entry itself the active leaf (every type but "leaf").
	MoveTo LeafMove = iota
	// MoveToTarget makes the "leaf" entry's targetId the active leaf.
	MoveToTarget
	// MoveToNull makes the leaf null (a "leaf" entry whose targetId is null, or
	// not a string).
	MoveToNull
	// MoveNone leaves the active leaf where it was: a "leaf" entry whose target is
	// unknown or is itself a "leaf" entry.
	MoveNone
)

// LeafMoveOf says how appending e moves the active leaf; isEntry reports whether
// an id names a known entry that can be on a path (not a "leaf" entry).
func LeafMoveOf(e Entry, isEntry func(id string) bool) (LeafMove, string) {
	if e.typ != TypeLeaf {
		return MoveTo, e.id
	}
	t, isStr := jsonString(e.field(fTargetID))
	switch {
	case !isStr:
		return MoveToNull, ""
	case isEntry(t):
		return MoveToTarget, t
	default:
		return MoveNone, ""
	}
}

// ActiveLeaf returns the index of the active leaf of entries in order, or false
// for a null leaf (no entries, or a "leaf" entry with a null target). The rule,
// the one every reader uses: the last entry is the active leaf unless it is a
// "leaf" entry; a "leaf" entry moves the active leaf to its targetId (null for a
// null target); a "leaf" entry whose target is unknown, or is another "leaf"
// entry, changes nothing, so the entries before it decide. Appending entries one
// by one and applying LeafMoveOf gives the same answer. ActiveLeafOf is the same
// rule over any Tree.
func ActiveLeaf(entries []Entry, idx Index) (int, bool) {
	return ActiveLeafOf(entryList{entries, idx})
}

// ActiveLeafID returns the id of the active leaf of entries (see ActiveLeaf), or
// "" for a null leaf.
func ActiveLeafID(entries []Entry) string {
	l := &lazyList{entries: entries}
	i, ok := ActiveLeafOf(l)
	if !ok {
		return ""
	}
	return entries[i].id
}

// ResolveLeaf returns the index of the leaf a context is built at: leafID nil
// means the active leaf; a pointer to "" is Pi's null leaf (false); an id that is
// unknown or names a "leaf" entry falls back to the active leaf.
func ResolveLeaf(entries []Entry, idx Index, leafID *string) (int, bool) {
	return ResolveLeafOf(entryList{entries, idx}, leafID)
}

// PathTo returns the indexes of the path from the root to the entry with index
// leaf, following parentId. "leaf" entries are never on a path: a parentId naming
// one, or no entry, ends the walk (that entry is the root of its path), and so
// does a cycle.
func PathTo(entries []Entry, idx Index, leaf int) []int {
	return PathOf(entryList{entries, idx}, leaf)
}

// PathToRoot returns the path from the root to entry id (root first), or false
// when id names no entry that can be on a path.
func PathToRoot(entries []Entry, idx Index, id string) ([]Entry, bool) {
	i, ok := onPathOf(entryList{entries, idx}, id)
	if !ok {
		return nil, false
	}
	path := PathTo(entries, idx, i)
	out := make([]Entry, len(path))
	for k, j := range path {
		out[k] = entries[j]
	}
	return out, true
}

// Children returns the entries whose parentId is id, in order ("leaf" entries,
// which are never on a path, excluded).
func Children(entries []Entry, id string) []Entry {
	var out []Entry
	for _, e := range entries {
		if e.hasPar && e.parentID == id && e.id != id && e.typ != TypeLeaf {
			out = append(out, e)
		}
	}
	return out
}

// BranchPoints returns the entries with more than one child, in order.
func BranchPoints(entries []Entry) []Entry {
	n := make(map[string]int)
	for _, e := range entries {
		if e.hasPar && e.parentID != e.id && e.typ != TypeLeaf {
			n[e.parentID]++
		}
	}
	var out []Entry
	seen := make(map[string]bool)
	for _, e := range entries {
		if n[e.id] > 1 && e.typ != TypeLeaf && !seen[e.id] {
			seen[e.id] = true
			out = append(out, e)
		}
	}
	return out
}

// Labels returns the label of each labelled entry: the last "label" entry per
// targetId wins, and one without a (non-empty) label clears it.
func Labels(entries []Entry) map[string]string {
	out := make(map[string]string)
	for _, e := range entries {
		if e.typ != TypeLabel {
			continue
		}
		target, ok := jsonString(e.field(fTargetID))
		if !ok {
			continue
		}
		if l, ok := jsonString(e.field(fLabel)); ok && l != "" {
			out[target] = l
		} else {
			delete(out, target)
		}
	}
	return out
}

// SessionName returns the name of the last "session_info" entry with a non-empty
// name ("" if none).
func SessionName(entries []Entry) string {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.typ == TypeSessionInfo {
			if n, ok := jsonString(e.field(fName)); ok && n != "" {
				return n
			}
		}
	}
	return ""
}

// ErrIDSpace is returned by NewID when it keeps drawing ids that are taken.
var ErrIDSpace = errors.New("no free entry id")

// NewID returns a new entry id as Pi makes them, 8 lowercase hex digits read from
// rnd (crypto/rand.Reader in production), drawing again while taken reports the
// id as used (at most 100 times; taken may be nil).
func NewID(rnd io.Reader, taken func(id string) bool) (string, error) {
	var b [4]byte
	for range 100 {
		if _, err := io.ReadFull(rnd, b[:]); err != nil {
			return "", fmt.Errorf("new entry id: %w", err)
		}
		id := hex.EncodeToString(b[:])
		if taken == nil || !taken(id) {
			return id, nil
		}
	}
	return "", fmt.Errorf("new entry id: %w: 100 collisions", ErrIDSpace)
}
