package sessiontree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// SyncFromLog adds the entries of the log file that the tree lacks (those a
// compaction dropped from the context file, or any written to the log by a flush
// that crashed before the context file). Afterwards the tree's order is the
// log's order followed by entries not yet in the log. The active leaf does not
// move. Added entries are never uploaded; those that follow the last entry the
// tree already had (a crash between the two files) are appended to the context
// file by the next Flush. A missing log file is not an error.
func (t *Tree) SyncFromLog(ctx context.Context) (LoadReport, error) {
	t.ioMu.Lock()
	defer t.ioMu.Unlock()
	if err := ctx.Err(); err != nil {
		return LoadReport{}, err
	}
	data, err := os.ReadFile(t.logPath)
	if errors.Is(err, fs.ErrNotExist) {
		return LoadReport{}, nil
	}
	if err != nil {
		return LoadReport{}, fmt.Errorf("sync %s from log: %w", t.ref, err)
	}
	d, rep, err := decodeSession(data, false)
	if err != nil {
		return rep, fmt.Errorf("sync %s from log: %w", t.ref, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.header.IsZero() {
		t.header = d.header
	}
	t.headerInLog = true
	lastKnown := -1
	for k, e := range d.entries {
		if _, ok := t.byID[e.ID()]; ok {
			lastKnown = k
		}
	}
	order := make([]int, 0, len(d.entries)+len(t.entries)) // old index, or -1-k for log entry k
	inOrder := make([]bool, len(t.entries))
	for k, e := range d.entries {
		if i, ok := t.byID[e.ID()]; ok {
			if !bytes.Equal(t.entries[i].Raw(), e.Raw()) {
				rep.Conflicts = append(rep.Conflicts, LineError{Err: fmt.Errorf("%w: id %q differs in the log", transcript.ErrConflict, e.ID())})
			}
			if !inOrder[i] {
				order, inOrder[i] = append(order, i), true
			}
			continue
		}
		order = append(order, -1-k)
	}
	for i := range t.entries {
		if !inOrder[i] {
			order = append(order, i)
		}
	}
	oldLeaf := -1
	if t.leaf >= 0 {
		oldLeaf = t.leaf
	}
	remap := make([]int, len(t.entries))
	entries := make([]Entry, 0, len(order))
	flags := make([]uint8, 0, len(order))
	byID := make(map[string]int, len(order))
	var ctxNew []int
	for n, o := range order {
		var e Entry
		var f uint8
		if o >= 0 {
			e, f = t.entries[o], t.flags[o]
			remap[o] = n
			if inOrder[o] {
				f |= inLog
			}
		} else {
			k := -1 - o
			e, f = d.entries[k], inLog|remoteDone
			rep.Added++
			if k > lastKnown {
				ctxNew = append(ctxNew, n)
			} else {
				t.ctxPartial = true // in the log, left out of the context file
			}
		}
		entries = append(entries, e)
		flags = append(flags, f)
		byID[e.ID()] = n
	}
	var pl, pr, cp []int
	for _, x := range t.pendingLocal {
		if flags[remap[x]]&inLog == 0 {
			pl = append(pl, remap[x])
		} else if flags[remap[x]]&inCtx == 0 {
			cp = append(cp, remap[x])
		}
	}
	for _, x := range t.ctxPending {
		cp = append(cp, remap[x])
	}
	cp = append(cp, ctxNew...)
	for _, x := range t.pendingRemote {
		pr = append(pr, remap[x])
	}
	t.entries, t.flags, t.byID = entries, flags, byID
	t.pendingLocal, t.pendingRemote, t.ctxPending = pl, pr, cp
	if oldLeaf >= 0 {
		t.leaf = remap[oldLeaf]
	} else if len(t.entries) > 0 && rep.Added == len(t.entries) {
		t.recomputeLeaf()
	}
	return rep, nil
}

// SyncFromRemote union-merges the entries Config.Remote holds for the session:
// entries the tree lacks are added (in the remote's order, after the tree's own)
// and written locally by the next Flush, but never uploaded; identical ones
// collapse (a pending local entry found remotely counts as uploaded); the same id
// with other bytes is reported as a conflict and the local entry kept. A
// "session" entry is the header. When entries were added and the tree has no
// local entries waiting for upload, the active leaf becomes the merged order's
// active leaf (the last entry, or a leaf entry's target).
//
// With a Remote that is an IncrementalReader, only the segments the tree does not
// hold yet are read, and the merged order above is theirs; which segments the
// tree holds is kept beside the local files (SegmentsSuffix), so this holds
// across restarts too.
func (t *Tree) SyncFromRemote(ctx context.Context) (LoadReport, error) {
	t.ioMu.Lock()
	defer t.ioMu.Unlock()
	var rep LoadReport
	if t.cfg.Remote == nil {
		return rep, fmt.Errorf("sync %s from remote: no Config.Remote", t.ref)
	}
	if ir, ok := t.cfg.Remote.(IncrementalReader); ok {
		return t.syncIncremental(ctx, ir)
	}
	var raws [][]byte
	res, err := t.cfg.Remote.ReadAll(ctx, t.ref)
	switch {
	case err == nil:
		raws = res.Raw()
	case !errors.Is(err, bucket.ErrNotFound):
		return rep, fmt.Errorf("sync %s from remote: %w", t.ref, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mergeRemote(raws, nil), nil
}

// mergeRemote merges raws, entries stored or on their way to the store, as
// SyncFromRemote describes. origins, when not nil, gives the origin of each of
// raws in the store (raws are then an increment, see syncIncremental). t.mu is
// held.
func (t *Tree) mergeRemote(raws [][]byte, origins []transcript.Origin) LoadReport {
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
					t.headerRemote = true
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
			if t.flags[i]&remoteDone == 0 {
				t.flags[i] |= remoteDone
				t.pendingRemote = without(t.pendingRemote, i)
			}
			continue
		}
		i := t.add(e, remoteDone)
		t.pendingLocal = append(t.pendingLocal, i)
		rep.Added++
	}
	if rep.Added > 0 && len(t.pendingRemote) == 0 {
		t.moveLeaf(merged, mergedOrigins)
	}
	for _, o := range mergedOrigins {
		if o.Key != "" && (t.remote.frontier.Key == "" || o.Compare(t.remote.frontier) > 0) {
			t.remote.frontier, t.remote.dirty = o, true
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
		if origins == nil || t.remote.frontier.Key == "" || origins[k].Compare(t.remote.frontier) >= 0 {
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
