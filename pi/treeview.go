package pi

// Tree is a session's lines in order as the tree rules (ActiveLeafOf,
// ResolveLeafOf, PathOf) read them, so that a reader that does not hold its
// entries as a []Entry (the CLI's lean read of a large session parses an entry
// only when a rule asks for it) applies the same rules as one that does.
// Positions 0 to Len()-1 may hold lines that are not entries of the tree (a
// session header, a line that does not parse): their Kind is KindNone, and the
// rules skip them.
type Tree interface {
	// Len returns the number of positions.
	Len() int
	// Kind says what position i holds.
	Kind(i int) Kind
	// Entry returns the entry at position i (KindEntry or KindLeaf).
	Entry(i int) Entry
	// Find returns the position of the entry with id.
	Find(id string) (int, bool)
	// Parent returns the position of the line that the parentId of the entry at
	// i names, if it names one.
	Parent(i int) (int, bool)
}

// Kind is what a position of a Tree holds.
type Kind uint8

// The kinds of a Tree's positions.
const (
	// KindNone is a line that is no entry of the tree (a header, an invalid line).
	KindNone Kind = iota
	// KindEntry is an entry that can be on a path: every type but "leaf".
	KindEntry
	// KindLeaf is a "leaf" entry: it moves the active leaf and is never on a path.
	KindLeaf
)

// KindOf returns the Kind of entry e.
func KindOf(e Entry) Kind {
	if e.typ == TypeLeaf {
		return KindLeaf
	}
	return KindEntry
}

// onPathOf returns the position of entry id if it can be on a path (it exists
// and is not a "leaf" entry).
func onPathOf(t Tree, id string) (int, bool) {
	i, ok := t.Find(id)
	return i, ok && t.Kind(i) == KindEntry
}

// ActiveLeafOf is ActiveLeaf over t: the position of the active leaf, or false
// for a null leaf.
func ActiveLeafOf(t Tree) (int, bool) {
	isEntry := func(id string) bool { _, ok := onPathOf(t, id); return ok }
	for i := t.Len() - 1; i >= 0; i-- {
		if t.Kind(i) == KindNone {
			continue
		}
		switch move, target := LeafMoveOf(t.Entry(i), isEntry); move {
		case MoveTo:
			return i, true
		case MoveToTarget:
			j, _ := t.Find(target)
			return j, true
		case MoveToNull:
			return 0, false
		}
	}
	return 0, false
}

// ResolveLeafOf is ResolveLeaf over t: leafID nil means the active leaf, a
// pointer to "" the null leaf, and an id that is unknown or names a "leaf" entry
// falls back to the active leaf.
func ResolveLeafOf(t Tree, leafID *string) (int, bool) {
	if leafID != nil {
		if *leafID == "" {
			return 0, false
		}
		if i, ok := onPathOf(t, *leafID); ok {
			return i, true
		}
	}
	return ActiveLeafOf(t)
}

// PathOf is PathTo over t: the positions of the path from the root to leaf,
// following parentId; a parent that is missing, not an entry or a "leaf" entry
// ends the walk, and so does a cycle.
func PathOf(t Tree, leaf int) []int {
	var rev []int
	seen := make([]bool, t.Len())
	for cur := leaf; !seen[cur]; {
		seen[cur] = true
		rev = append(rev, cur)
		p, ok := t.Parent(cur)
		if !ok || t.Kind(p) != KindEntry {
			break
		}
		cur = p
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// entryList is the Tree of entries in order, indexed by idx.
type entryList struct {
	entries []Entry
	idx     Index
}

func (l entryList) Len() int          { return len(l.entries) }
func (l entryList) Kind(i int) Kind   { return KindOf(l.entries[i]) }
func (l entryList) Entry(i int) Entry { return l.entries[i] }
func (l entryList) Find(id string) (int, bool) {
	i, ok := l.idx[id]
	return i, ok
}

func (l entryList) Parent(i int) (int, bool) {
	e := l.entries[i]
	if !e.hasPar {
		return 0, false
	}
	p, ok := l.idx[e.parentID]
	return p, ok
}

// lazyList is an entryList that indexes its entries only when a lookup needs
// the index: the active leaf is most often the last entry, found without one.
type lazyList struct {
	entries []Entry
	idx     Index // nil until a lookup needs it
}

func (l *lazyList) indexed() entryList {
	if l.idx == nil {
		l.idx = NewIndex(l.entries)
	}
	return entryList{l.entries, l.idx}
}

func (l *lazyList) Len() int                   { return len(l.entries) }
func (l *lazyList) Kind(i int) Kind            { return KindOf(l.entries[i]) }
func (l *lazyList) Entry(i int) Entry          { return l.entries[i] }
func (l *lazyList) Find(id string) (int, bool) { return l.indexed().Find(id) }
func (l *lazyList) Parent(i int) (int, bool)   { return l.indexed().Parent(i) }
