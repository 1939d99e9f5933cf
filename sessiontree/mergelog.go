package sessiontree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/transcriptstore/transcript/transcript"
)

// MergeLog adds the entries of the log file that the tree lacks (those a
// compaction dropped from the context file, or any written to the log by a flush
// that crashed before the context file). Afterwards the tree's order is the
// log's order followed by entries not yet in the log. The active leaf does not
// move. Added entries are never uploaded; those that follow the last entry the
// tree already had (a crash between the two files) are appended to the context
// file by the next Flush. A missing log file is not an error.
func (t *Tree) MergeLog(ctx context.Context) (LoadReport, error) {
	t.ioMu.Lock()
	defer t.ioMu.Unlock()
	if err := ctx.Err(); err != nil {
		return LoadReport{}, err
	}
	data, err := os.ReadFile(t.files.Log)
	if errors.Is(err, fs.ErrNotExist) {
		return LoadReport{}, nil
	}
	if err != nil {
		return LoadReport{}, fmt.Errorf("merge log of %s: %w", t.ref, err)
	}
	d, rep, err := decodeSession(data, false)
	if err != nil {
		return rep, fmt.Errorf("merge log of %s: %w", t.ref, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.header.IsZero() {
		t.header = d.header
	}
	t.headerInLog = true
	plan := t.planLogMerge(d.entries, &rep)
	t.applyLogMerge(plan, &rep)
	return rep, nil
}

// logMerge is what MergeLog makes of the tree: the log's order, then the entries
// of the tree that the log lacks.
type logMerge struct {
	// logged are the log's entries, in its order.
	logged []Entry
	// order is the tree's order after the merge: an index of the tree's entries,
	// or -1-k for logged[k], which the tree lacks.
	order []int
	// inLog reports, by index of the tree's entries, whether the log holds it.
	inLog []bool
	// lastKnown is the index in logged of the last entry the tree held, -1 for
	// none: the entries the tree lacks after it are missing from the context
	// file too (a crash between the two files), those before it were left out of
	// it by a compaction's rewrite.
	lastKnown int
}

// planLogMerge orders the tree's entries and the log's, reporting a log entry
// whose id the tree holds with other bytes as a conflict (the tree's is kept).
// t.mu is held.
func (t *Tree) planLogMerge(logged []Entry, rep *LoadReport) logMerge {
	m := logMerge{
		logged:    logged,
		order:     make([]int, 0, len(logged)+len(t.entries)),
		inLog:     make([]bool, len(t.entries)),
		lastKnown: -1,
	}
	for k, e := range logged {
		i, ok := t.byID[e.ID()]
		if !ok {
			m.order = append(m.order, -1-k)
			continue
		}
		m.lastKnown = k
		if !bytes.Equal(t.entries[i].Raw(), e.Raw()) {
			rep.Conflicts = append(rep.Conflicts, LineError{Err: fmt.Errorf("%w: id %q differs in the log", transcript.ErrConflict, e.ID())})
		}
		if !m.inLog[i] {
			m.order, m.inLog[i] = append(m.order, i), true
		}
	}
	for i := range t.entries {
		if !m.inLog[i] {
			m.order = append(m.order, i)
		}
	}
	return m
}

// applyLogMerge rebuilds the tree in m's order: the log's entries it lacked are
// added as persisted in the log and never to be uploaded, its pending work is
// carried over to the new indices, and the active leaf stays on its entry (a
// tree that held nothing takes the leaf of what it now holds). t.mu is held.
func (t *Tree) applyLogMerge(m logMerge, rep *LoadReport) {
	remap := make([]int, len(t.entries))
	entries := make([]Entry, 0, len(m.order))
	flags := make([]uint8, 0, len(m.order))
	byID := make(map[string]int, len(m.order))
	var ctxNew []int
	for n, o := range m.order {
		var e Entry
		var f uint8
		if o >= 0 {
			e, f = t.entries[o], t.flags[o]
			remap[o] = n
			if m.inLog[o] {
				f |= inLog
			}
		} else {
			k := -1 - o
			e, f = m.logged[k], inLog|uploaded
			rep.Added++
			if k > m.lastKnown {
				ctxNew = append(ctxNew, n)
			} else {
				t.ctxPartial = true // in the log, left out of the context file
			}
		}
		entries = append(entries, e)
		flags = append(flags, f)
		byID[e.ID()] = n
	}
	var pl, pu, cp []int
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
	for _, x := range t.pendingUpload {
		pu = append(pu, remap[x])
	}
	oldLeaf := t.leaf
	t.entries, t.flags, t.byID = entries, flags, byID
	t.entriesChanged()
	t.pendingLocal, t.pendingUpload, t.ctxPending = pl, pu, cp
	t.stored.canon.valid = false // it holds indices of the old order
	if oldLeaf >= 0 {
		t.leaf = remap[oldLeaf]
	} else if len(t.entries) > 0 && rep.Added == len(t.entries) {
		t.recomputeLeaf()
	}
}
