package sessiontree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
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
				rep.Conflicts = append(rep.Conflicts, LineError{Err: fmt.Errorf("%w: id %q differs in the log", ErrConflict, e.ID())})
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
			e, f = d.entries[k], inLog|uploaded
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
	for _, x := range t.pendingUpload {
		pr = append(pr, remap[x])
	}
	t.entries, t.flags, t.byID = entries, flags, byID
	t.pendingLocal, t.pendingUpload, t.ctxPending = pl, pr, cp
	if oldLeaf >= 0 {
		t.leaf = remap[oldLeaf]
	} else if len(t.entries) > 0 && rep.Added == len(t.entries) {
		t.recomputeLeaf()
	}
	return rep, nil
}
