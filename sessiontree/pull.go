package sessiontree

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Pull union-merges the entries Config.Store holds for the session:
// entries the tree lacks are added (in the store's order, after the tree's own)
// and written locally by the next Flush, but never uploaded; identical ones
// collapse (a pending local entry found in the store counts as uploaded); the
// same id with other bytes is reported as a conflict and the local entry kept. A
// "session" entry is the header. When entries were added and the tree has no
// local entries waiting for upload, the active leaf becomes the merged order's
// active leaf (the last entry, or a leaf entry's target).
//
// Only the segments the tree does not hold yet are read, and the merged order
// above is theirs; which segments the tree holds is kept beside the local files
// (Files.Segments), so this holds across restarts too.
func (t *Tree) Pull(ctx context.Context) (LoadReport, error) {
	t.ioMu.Lock()
	defer t.ioMu.Unlock()
	if t.cfg.Store == nil {
		return LoadReport{}, fmt.Errorf("pull %s: no Config.Store", t.ref)
	}
	t.mu.Lock()
	have := t.storedHave()
	t.mu.Unlock()
	inc, err := t.cfg.Store.ReadNew(ctx, t.ref, have)
	if errors.Is(err, bucket.ErrNotFound) {
		return LoadReport{}, nil
	}
	if err != nil {
		return LoadReport{}, fmt.Errorf("pull %s: %w", t.ref, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	origins := make([]transcript.Origin, len(inc.Entries))
	for i, e := range inc.Entries {
		origins[i] = e.Origin
	}
	rep := t.mergeStored(inc.Raw(), origins)
	// The new set is kept even when it names the same segments: it carries when
	// the next pull lists the whole session (see transcript.Store.ReadNew). Only a
	// change of the segments is worth writing down; a restarted tree lists the
	// whole session once anyway.
	if inc.Changed(have) {
		t.stored.dirty = true
	}
	t.stored.have = inc.Have
	return rep, t.saveStoredSet()
}

// mergeStored merges raws, entries stored or on their way to the store, as
// Pull describes. origins, when not nil, gives the origin of each of
// raws in the store (raws are then an increment, see Pull). t.mu is
// held.
func (t *Tree) mergeStored(raws [][]byte, origins []transcript.Origin) LoadReport {
	var rep LoadReport
	var merged []Entry
	var mergedOrigins []transcript.Origin
	for n, raw := range raws {
		raw = bytes.Clone(raw)
		// One parse per entry: ParseEntry refuses a header (see ClassifyRaw), so
		// the header parser runs only on what it refused.
		e, err := ParseEntry(raw)
		if err != nil {
			if h, herr := pi.ParseHeader(raw); herr == nil {
				if t.header.IsZero() {
					t.header = h
				}
				if bytes.Equal(h.Raw(), t.header.Raw()) {
					t.headerUploaded = true
				}
			} else {
				rep.Malformed = append(rep.Malformed, LineError{Line: n + 1, Err: err})
			}
			continue
		}
		merged = append(merged, e)
		if origins != nil {
			mergedOrigins = append(mergedOrigins, origins[n])
		}
		if i, ok := t.byID[e.ID()]; ok {
			if !bytes.Equal(t.entries[i].Raw(), e.Raw()) {
				rep.Conflicts = append(rep.Conflicts, LineError{Line: n + 1, Err: fmt.Errorf("%w: id %q differs in the store", transcript.ErrConflict, e.ID())})
				continue
			}
			rep.Duplicates++
			if t.flags[i]&uploaded == 0 {
				t.flags[i] |= uploaded
				t.pendingUpload = without(t.pendingUpload, i)
			}
			continue
		}
		i := t.add(e, uploaded)
		t.pendingLocal = append(t.pendingLocal, i)
		rep.Added++
	}
	if rep.Added > 0 && len(t.pendingUpload) == 0 {
		t.moveLeaf(merged, mergedOrigins)
	}
	for _, o := range mergedOrigins {
		if o.Key != "" && (t.stored.frontier.Key == "" || o.Compare(t.stored.frontier) > 0) {
			t.stored.frontier, t.stored.dirty = o, true
		}
	}
	return rep
}

// moveLeaf sets the active leaf after merged (entries the tree holds now, in the
// store's merge order among themselves) were merged: the last of them that
// decides the leaf does (pi.LeafMoveOf), its "leaf" target resolved among all the
// tree's entries, not only merged (a branch move on another replica names an
// entry this tree held already). When none decides, the leaf stays. origins, when
// not nil, are merged's origins: an increment. An increment is not the whole
// session, so its deciding entry decides only if it sorts after every entry the
// tree merged from the store before (the frontier); else one of those comes later
// in the store's merge order and the leaf stays where they put it. t.mu is held.
func (t *Tree) moveLeaf(merged []Entry, origins []transcript.Origin) {
	for k := len(merged) - 1; k >= 0; k-- {
		move, target := t.leafMove(merged[k])
		if move == pi.MoveNone {
			continue
		}
		if origins == nil || t.stored.frontier.Key == "" || origins[k].Compare(t.stored.frontier) >= 0 {
			t.setLeaf(move, target, t.byID[merged[k].ID()])
		}
		return
	}
}

func without(xs []int, x int) []int {
	out := xs[:0]
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}
