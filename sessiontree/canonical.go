package sessiontree

import (
	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// The canonical order. ReadAll orders a session's entries by a rule on the set
// of (entry, origin) pairs alone (transcript.CanonicalOrder), and the active leaf
// and the winner of a conflict follow from it. A tree that pulls increments sees
// the set piece by piece, so it keeps the origin of every entry it holds from
// the store (storeState.origins) and answers from the whole set after each pull
// that changed it: the same leaf, context and winners as ReadAll of the segments
// it holds. An entry whose origin it does not know yet (created here and not yet
// pulled back) sorts after every stored one, in the tree's order: where it will
// land, since a writer's keys follow every key it read.

// heldOrigin is the origin of the version of an entry the tree holds.
type heldOrigin struct {
	origin transcript.Origin
	// sum is the xxhash64 of that version's bytes: a record read from the
	// segments file counts only for the bytes it was written for.
	sum uint64
	// checked: sum was compared with the tree's entry (or the record was made
	// from it).
	checked bool
}

// unstoredKey is the origin key given to an entry whose origin the tree does not
// know: it sorts after every segment key ("L0/{time}-...", the time being
// digits).
const unstoredKey = "L0/~"

// storedVersion is one version of an entry read from the store (known: with its
// origin) or from the uploader's pending entries.
type storedVersion struct {
	raw    []byte
	origin transcript.Origin
	known  bool
	// loser: a version that lost a conflict within what was read. Unless it wins
	// over the tree's version it is the store's own conflict (ReadAll reports
	// it), not one with the tree, and is not reported.
	loser bool
}

// versionsOf returns the versions an increment holds: the winners, then the
// versions that lost a conflict (the tree may hold one of them).
func versionsOf(inc *transcript.Increment) []storedVersion {
	vs := make([]storedVersion, 0, len(inc.Entries)+len(inc.Losers))
	for k, list := range [][]transcript.Entry{inc.Entries, inc.Losers} {
		for _, e := range list {
			vs = append(vs, storedVersion{raw: e.Raw, origin: e.Origin, known: true, loser: k == 1})
		}
	}
	return vs
}

// unstoredVersions returns raws as versions whose origin is not known (the
// uploader's pending entries).
func unstoredVersions(raws [][]byte) []storedVersion {
	vs := make([]storedVersion, len(raws))
	for i, raw := range raws {
		vs[i] = storedVersion{raw: raw}
	}
	return vs
}

// originOf returns the origin of entry i, when known. A record read from the
// segments file is checked against the entry's bytes the first time. t.mu is
// held.
func (t *Tree) originOf(i int) (transcript.Origin, bool) {
	id := t.entries[i].ID()
	h, ok := t.stored.origins[id]
	if !ok {
		return transcript.Origin{}, false
	}
	if !h.checked {
		if h.sum != xxhash.Sum64(t.entries[i].Raw()) {
			delete(t.stored.origins, id)
			t.stored.olog.stale = true
			return transcript.Origin{}, false
		}
		h.checked = true
		t.stored.origins[id] = h
	}
	return h.origin, true
}

// setOrigin records o as the origin of entry i's version. t.mu is held.
func (t *Tree) setOrigin(i int, o transcript.Origin) {
	if t.stored.origins == nil {
		t.stored.origins = map[string]heldOrigin{}
	}
	h := heldOrigin{origin: o, sum: xxhash.Sum64(t.entries[i].Raw()), checked: true}
	t.stored.origins[t.entries[i].ID()] = h
	t.stored.olog.add(t.entries[i].ID(), o, h.sum)
	t.stored.dirty = true
}

// learnOrigin records that entry i's version is stored at o too: its origin is
// the earliest. It reports whether that changed it. t.mu is held.
func (t *Tree) learnOrigin(i int, o transcript.Origin) bool {
	if cur, ok := t.originOf(i); ok && cur.Compare(o) <= 0 {
		return false
	}
	t.setOrigin(i, o)
	return true
}

// winsOver reports whether another version of entry i, stored at o, wins over
// the one the tree holds: the earliest origin wins, and a version whose origin
// the tree does not know yet counts as later. A version only this tree has (not
// handed to an uploader) is never replaced: nothing else holds its bytes. t.mu
// is held.
func (t *Tree) winsOver(i int, o transcript.Origin) bool {
	cur, known := t.originOf(i)
	if known {
		return o.Compare(cur) < 0
	}
	return t.flags[i]&uploaded != 0 && t.cfg.Uploader != nil
}

// replaceVersion makes e, stored at o, the version of entry i the tree holds. The
// local files are rewritten by the next flush when they hold the old one. t.mu
// is held.
func (t *Tree) replaceVersion(i int, e Entry, o transcript.Origin) {
	t.entries[i] = e
	t.entriesChanged() // another version may name another parent
	t.setOrigin(i, o)
	if t.flags[i]&(inLog|inCtx) != 0 {
		if t.replaced == nil {
			t.replaced = map[string]bool{}
		}
		t.replaced[e.ID()] = true
	}
}

// canonState is what the last full ordering of the tree's entries found
// (canonicalLeaf), so that a pull that only appends to the canonical order does
// not order the whole set again (canonAppend).
type canonState struct {
	// valid: every entry had a known origin and no parent cycle was broken.
	valid bool
	// n is the number of entries then, max their greatest origin, leaf the
	// canonical leaf (-1: null).
	n    int
	max  transcript.Origin
	leaf int
	// missing holds the parent ids entries named that the tree did not hold.
	missing map[string]bool
}

// placeLeaf sets the active leaf after a pull that set the origins of the
// entries in set (added, learned or replaced): canonAppend when it can answer,
// else canonicalLeaf. t.mu is held.
func (t *Tree) placeLeaf(set map[int]bool, replaced bool) {
	if replaced || !t.canonAppend(set) {
		t.canonicalLeaf()
	}
}

// canonAppend answers for the common pull: the entries whose origins it set
// are exactly those added to the tree since the last full ordering, all sort
// after every entry ordered then, and none is the parent of one of those. The
// merge places entries parents first, the ready one with the earliest origin
// first, so the order of the whole set is then the old order followed by the
// new entries' own order, and the leaf is the last of them that decides it, or
// the old leaf. It reports false when it cannot answer. t.mu is held.
func (t *Tree) canonAppend(set map[int]bool) bool {
	c := &t.stored.canon
	if !c.valid || len(set) != len(t.entries)-c.n {
		return false
	}
	es := make([]transcript.Entry, 0, len(set))
	for i := range set {
		o, ok := t.originOf(i)
		if i < c.n || !ok || o.Compare(c.max) <= 0 || c.missing[t.entries[i].ID()] {
			return false
		}
		es = append(es, t.canonEntry(i, o))
	}
	ordered, cycles := transcript.CanonicalOrder(es)
	if cycles > 0 {
		return false
	}
	leaf, ok := t.lastDecided(ordered)
	if !ok {
		leaf = c.leaf
	}
	for _, e := range es {
		if e.Origin.Compare(c.max) > 0 {
			c.max = e.Origin
		}
		if _, held := t.byID[e.ParentID]; e.ParentID != "" && !held {
			c.missing[e.ParentID] = true
		}
	}
	c.n, c.leaf = len(t.entries), leaf
	t.moveLeafTo(leaf)
	return true
}

// canonicalLeaf sets the active leaf to the one of the tree's entries in
// canonical order (see above), and records what it found in t.stored.canon.
// t.mu is held.
func (t *Tree) canonicalLeaf() {
	c := canonState{valid: true, n: len(t.entries), missing: map[string]bool{}}
	es := make([]transcript.Entry, len(t.entries))
	for i := range t.entries {
		o, ok := t.originOf(i)
		if !ok {
			o, c.valid = transcript.Origin{Key: unstoredKey, Pos: i}, false
		} else if o.Compare(c.max) > 0 {
			c.max = o
		}
		es[i] = t.canonEntry(i, o)
		if _, held := t.byID[es[i].ParentID]; es[i].ParentID != "" && !held {
			c.missing[es[i].ParentID] = true
		}
	}
	ordered, cycles := transcript.CanonicalOrder(es)
	c.valid = c.valid && cycles == 0
	leaf, ok := t.lastDecided(ordered)
	if !ok {
		leaf = -1
	}
	c.leaf = leaf
	t.stored.canon = c
	t.moveLeafTo(leaf)
}

// canonEntry is entry i, at origin o, as transcript.CanonicalOrder reads it
// (Pos: its index in the tree).
func (t *Tree) canonEntry(i int, o transcript.Origin) transcript.Entry {
	parent, _ := t.entries[i].ParentID()
	return transcript.Entry{ID: t.entries[i].ID(), ParentID: parent, Origin: o, Pos: i}
}

// lastDecided applies pi's leaf rule to ordered (entries by tree index in Pos):
// the leaf the last entry that decides it gives (-1: null), or false when none
// does. t.mu is held.
func (t *Tree) lastDecided(ordered []transcript.Entry) (int, bool) {
	for k := len(ordered) - 1; k >= 0; k-- {
		i := ordered[k].Pos
		switch move, target := t.leafMove(t.entries[i]); move {
		case pi.MoveTo:
			return i, true
		case pi.MoveToTarget:
			return t.byID[target], true
		case pi.MoveToNull:
			return -1, true
		}
	}
	return -1, false
}

// moveLeafTo makes entry leaf (-1: none) the active leaf. t.mu is held.
func (t *Tree) moveLeafTo(leaf int) {
	switch {
	case leaf == t.leaf:
	case leaf >= 0 && t.leaf >= 0 && isChildOf(t.entries[leaf], t.entries[t.leaf].ID()):
		t.leaf = leaf // onto a child of the leaf: the path only grows
	default:
		t.jumpLeaf(leaf)
	}
}

// isChildOf reports whether e's parentId is id.
func isChildOf(e Entry, id string) bool {
	p, ok := e.ParentID()
	return ok && p == id
}
