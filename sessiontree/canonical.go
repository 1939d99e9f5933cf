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
}

// versionsOf returns the versions an increment holds: the winners, then the
// versions that lost a conflict (the tree may hold one of them).
func versionsOf(inc *transcript.Increment) []storedVersion {
	vs := make([]storedVersion, 0, len(inc.Entries)+len(inc.Losers))
	for _, list := range [][]transcript.Entry{inc.Entries, inc.Losers} {
		for _, e := range list {
			vs = append(vs, storedVersion{raw: e.Raw, origin: e.Origin, known: true})
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
	t.stored.origins[t.entries[i].ID()] = heldOrigin{origin: o, sum: xxhash.Sum64(t.entries[i].Raw()), checked: true}
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
	t.setOrigin(i, o)
	if t.flags[i]&(inLog|inCtx) != 0 {
		if t.replaced == nil {
			t.replaced = map[string]bool{}
		}
		t.replaced[e.ID()] = true
	}
}

// canonicalLeaf sets the active leaf to the one of the tree's entries in
// canonical order (see above). t.mu is held.
func (t *Tree) canonicalLeaf() {
	es := make([]transcript.Entry, len(t.entries))
	for i, e := range t.entries {
		o, ok := t.originOf(i)
		if !ok {
			o = transcript.Origin{Key: unstoredKey, Pos: i}
		}
		parent, _ := e.ParentID()
		es[i] = transcript.Entry{ID: e.ID(), ParentID: parent, Origin: o, Pos: i}
	}
	ordered, _ := transcript.CanonicalOrder(es)
	leaf := -1
	for k := len(ordered) - 1; k >= 0; k-- {
		i := ordered[k].Pos
		move, target := t.leafMove(t.entries[i])
		if move == pi.MoveNone {
			continue
		}
		switch move {
		case pi.MoveTo:
			leaf = i
		case pi.MoveToTarget:
			leaf = t.byID[target]
		}
		break
	}
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
