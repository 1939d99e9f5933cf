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
// entries the tree lacks are added (after the tree's own) and written locally by
// the next Flush, but never uploaded; identical ones collapse (a pending local
// entry found in the store counts as uploaded). Of two versions of one id (other
// bytes) the tree keeps the one ReadAll keeps, the earliest stored, and reports
// the conflict (a version that lost to another stored one and not to the tree's
// is the store's own conflict, not reported here); a local version not yet
// handed to the uploader is always kept. A "session" entry is the header: a
// tree that has not written its own header anywhere yet (New, before its first
// Flush, while another replica stored the session) takes the stored one, so
// that it never uploads a second header.
//
// When the pull changed what the tree holds from the store (entries, origins,
// versions) and the tree has no local entries waiting for upload, the active
// leaf becomes the one of the canonical order of the tree's entries (see
// canonical.go): the leaf ReadAll of the same entries gives.
//
// Only the segments the tree does not hold yet are read; which segments it holds
// and the origin of each entry it holds from them are kept beside the local files
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
	rep := t.mergeStored(versionsOf(inc))
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

// mergeStored merges vs, versions of entries stored or on their way to the
// store, as Pull describes. t.mu is held.
func (t *Tree) mergeStored(vs []storedVersion) LoadReport {
	var rep LoadReport
	changed, replaced := false, false
	set := map[int]bool{} // entries whose origin this merge set
	for n, v := range vs {
		raw := bytes.Clone(v.raw)
		// One parse per entry: ParseEntry refuses a header (see ClassifyRaw), so
		// the header parser runs only on what it refused.
		e, err := ParseEntry(raw)
		if err != nil {
			if h, herr := pi.ParseHeader(raw); herr == nil {
				if t.header.IsZero() || !t.headerWritten() {
					// The stored header is the session's. A tree that has
					// written its own nowhere yet (New, before its first
					// Flush: another replica stored the session meanwhile)
					// takes it, so that it never uploads a second header
					// that conflicts with the first.
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
		i, ok := t.byID[e.ID()]
		switch {
		case !ok:
			i = t.add(e, uploaded)
			t.pendingLocal = append(t.pendingLocal, i)
			rep.Added++
			if v.known {
				t.setOrigin(i, v.origin)
				set[i] = true
			}
			changed = true
		case bytes.Equal(t.entries[i].Raw(), e.Raw()):
			rep.Duplicates++
			if t.flags[i]&uploaded == 0 {
				t.flags[i] |= uploaded
				t.pendingUpload = without(t.pendingUpload, i)
			}
			if v.known && t.learnOrigin(i, v.origin) {
				changed, set[i] = true, true
			}
		default:
			wins := v.known && t.winsOver(i, v.origin)
			if wins || !v.loser {
				rep.Conflicts = append(rep.Conflicts, LineError{Line: n + 1, Err: fmt.Errorf("%w: id %q differs in the store", transcript.ErrConflict, e.ID())})
			}
			if wins {
				t.replaceVersion(i, e, v.origin)
				changed, replaced = true, true
			}
		}
	}
	if changed && len(t.pendingUpload) == 0 {
		t.placeLeaf(set, replaced)
	}
	return rep
}

// headerWritten reports whether the tree's header went anywhere: into a local
// file or to the uploader. t.mu is held.
func (t *Tree) headerWritten() bool {
	return t.headerUploaded || t.headerInLog || t.headerInCtx
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
