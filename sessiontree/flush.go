package sessiontree

import (
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/pi"
)

// Flush persists the pending entries and hands the new local ones to the
// uploader. Nothing is written before the first Flush. Flush does two things:
//
//   - local: the log file gets the header (first time only) and every entry not
//     yet in it, then fsync; the context file gets the same (append + fsync), or,
//     when a compaction entry is among them, is rewritten atomically to hold what
//     the model still needs (see contextKeep);
//   - upload: Config.Uploader receives one Batch: the header line first if it was
//     never accepted, then every locally created entry not yet accepted, in order.
//
// The hand-over comes first (the async mirror makes it durable in its outbox), so
// that a crash between the two steps cannot leave entries that exist only in the
// local files unrecorded; an uploader that ReadsLocalFiles (the legacy mirror)
// gets them written first instead.
//
// A failed hand-over (an outbox that is full, a store that is down for an
// uploader that writes to it directly) still makes the turn durable locally:
// before the local files get anything the uploader has not accepted, Flush
// records which entries those are (and whether the header is one) in the
// unsent file (Files.Unsent: replaced atomically, fsynced), then writes the
// local files, and returns an error wrapping ErrUnsent and the uploader's
// error. The entries stay pending; the next Flush hands them over, the older
// ones before the newer, and removes the record once nothing it names waits.
// Load reads the record back, so a restarted process hands them over too
// instead of counting what the local files hold as uploaded. A Flush whose
// hand-over succeeds writes no record (it removes one only when one is left).
// With nothing pending Flush does nothing.
func (t *Tree) Flush(ctx context.Context) error {
	t.ioMu.Lock()
	defer t.ioMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.cfg.Uploader == nil || t.cfg.Uploader.ReadsLocalFiles() {
		if err := t.flushLocal(); err != nil {
			return err
		}
		return t.flushUpload(ctx)
	}
	upErr := t.flushUpload(ctx)
	if err := t.flushLocal(); err != nil {
		return errors.Join(upErr, err)
	}
	if upErr != nil {
		return fmt.Errorf("%w: %w", ErrUnsent, upErr)
	}
	return nil
}

// flushLocal writes the local files, recording first what of them the
// uploader lacks (recordUnsent), and removes that record once nothing it
// names waits (dropUnsent).
func (t *Tree) flushLocal() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.recordUnsent(); err != nil {
		return err
	}
	if err := t.flushLocalLocked(); err != nil {
		return err
	}
	if err := t.afterLocalFlush(); err != nil {
		return err
	}
	return t.dropUnsent()
}

// flushUpload hands the entries not yet accepted by the uploader to it.
func (t *Tree) flushUpload(ctx context.Context) error {
	t.mu.Lock()
	if t.cfg.Uploader == nil {
		for _, i := range t.pendingUpload {
			t.flags[i] |= uploaded
		}
		t.pendingUpload, t.headerUploaded = nil, true
		t.mu.Unlock()
		return nil
	}
	if len(t.pendingUpload) == 0 && (t.headerUploaded || len(t.entries) == 0) {
		t.mu.Unlock()
		return nil
	}
	b := Batch{Ref: t.ref, Files: t.files, Entries: make([][]byte, 0, len(t.pendingUpload)+1)}
	if !t.headerUploaded {
		b.Entries = append(b.Entries, t.header.Raw())
	} else {
		b.Links = make([]pi.Links, 0, len(t.pendingUpload))
	}
	n := len(t.pendingUpload)
	for _, i := range t.pendingUpload {
		b.Entries = append(b.Entries, t.entries[i].Raw())
		if b.Links != nil {
			b.Links = append(b.Links, t.entries[i].Links())
		}
	}
	t.mu.Unlock()

	if err := t.cfg.Uploader.Upload(ctx, b); err != nil {
		return fmt.Errorf("flush %s: upload %d entries: %w", t.ref, len(b.Entries), err)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	for _, i := range t.pendingUpload[:n] {
		t.flags[i] |= uploaded
	}
	t.pendingUpload = append([]int(nil), t.pendingUpload[n:]...)
	t.headerUploaded = true
	return nil
}

func (t *Tree) flushLocalLocked() error {
	t.refreshCycles()
	if len(t.replaced) > 0 {
		return t.rewriteLocalFiles()
	}
	if len(t.pendingLocal) == 0 && len(t.ctxPending) == 0 && !t.rewriteCtx && t.cyc.on == nil {
		return nil
	}
	if len(t.pendingLocal) > 0 || !t.headerInLog {
		buf := t.lines(!t.headerInLog, t.pendingLocal)
		if err := writeAppend(t.files.Log, buf, t.cfg.NoSync); err != nil {
			return fmt.Errorf("flush %s: %w", t.ref, err)
		}
		t.headerInLog = true
		for _, i := range t.pendingLocal {
			t.flags[i] |= inLog
			if t.flags[i]&inCtx == 0 {
				t.ctxPending = append(t.ctxPending, i)
			}
		}
		t.pendingLocal = nil
	}
	if keep := t.contextRewrite(); keep != nil {
		return t.rewriteContext(keep)
	}
	if t.cyc.on != nil && t.ctxHoldsCycle() {
		// An entry of the file is on a cycle now (a pull brought the entry
		// that closes it): the file is written again without it.
		return t.rewriteContext(t.ctxKeep())
	}
	t.rewriteCtx, t.leafJumped = false, false
	t.dropCycleEntries()
	if len(t.ctxPending) > 0 || !t.headerInCtx {
		buf := t.lines(!t.headerInCtx, t.ctxPending)
		if err := writeAppend(t.files.Context, buf, t.cfg.NoSync); err != nil {
			return fmt.Errorf("flush %s: %w", t.ref, err)
		}
		t.headerInCtx = true
		for _, i := range t.ctxPending {
			t.flags[i] |= inCtx
		}
		t.ctxPending = nil
	}
	return nil
}

// rewriteContext replaces the context file with the header and the entries keep
// keeps (see contextRewrite), but for those on a parent cycle (cycles.go), which
// it clears in keep. t.mu is held.
func (t *Tree) rewriteContext(keep []bool) error {
	var kept []int
	for i, k := range keep {
		if k && t.onCycle(i) {
			keep[i] = false
		}
		if keep[i] {
			kept = append(kept, i)
		}
	}
	buf := t.lines(true, kept)
	if err := writeAtomic(t.files.Context, buf, t.cfg.NoSync); err != nil {
		return fmt.Errorf("flush %s: rewrite context file: %w", t.ref, err)
	}
	t.ctxPartial = false
	for i, k := range keep {
		if k {
			t.flags[i] |= inCtx
		} else {
			t.flags[i] &^= inCtx
			t.ctxPartial = t.ctxPartial || t.flags[i]&inLog != 0
		}
	}
	t.headerInCtx, t.ctxPending, t.rewriteCtx, t.leafJumped = true, nil, false, false
	return nil
}

// lines returns the JSONL of the entries at idx, in that order, after the
// header line when header is set, in one buffer made at its final size: a
// first flush of an imported session writes hundreds of megabytes, which
// growing the buffer as it goes would copy about twice and hold twice over at
// its peak.
func (t *Tree) lines(header bool, idx []int) []byte {
	n := 0
	if header {
		n += len(t.header.Raw()) + 1
	}
	for _, i := range idx {
		n += len(t.entries[i].Raw()) + 1
	}
	buf := make([]byte, 0, n)
	if header {
		buf = append(append(buf, t.header.Raw()...), '\n')
	}
	for _, i := range idx {
		buf = append(append(buf, t.entries[i].Raw()...), '\n')
	}
	return buf
}

// contextRewrite returns what a rewrite of the context file keeps now, or nil
// when the file is only appended to (caller holds mu; the log is written):
//
//   - after a compaction was appended, what contextKeep keeps (nil when the
//     active path holds no compaction);
//   - after the leaf moved other than onto a new entry, while the file lacks
//     entries of the log: what the file must hold for the new leaf (contextKeep,
//     or the log for a path without a compaction), if it lacks any of it. A
//     Branch back before the compaction that rewrote the file (or a leaf entry,
//     or a pull, moving there) makes the next entries children of entries the
//     file left out, and Pi, or `transcript context --file`, reading the file
//     alone would walk a path cut short.
func (t *Tree) contextRewrite() []bool {
	moved := t.leafJumped && t.ctxPartial
	if !t.rewriteCtx && !moved {
		return nil
	}
	keep, ok := t.contextKeep()
	if moved {
		need := keep
		if !ok {
			need = t.logKeep()
		}
		if t.lacks(need) {
			return need
		}
	}
	if t.rewriteCtx && ok {
		return keep
	}
	return nil
}

// lacks reports whether an entry of need is neither in the context file nor
// about to be appended to it.
func (t *Tree) lacks(need []bool) bool {
	pending := make(map[int]bool, len(t.ctxPending))
	for _, i := range t.ctxPending {
		pending[i] = true
	}
	for i, k := range need {
		if k && t.flags[i]&inCtx == 0 && !pending[i] && !t.onCycle(i) {
			return true
		}
	}
	return false
}

// ctxKeep keeps what the context file holds and what is about to be appended
// to it. t.mu is held.
func (t *Tree) ctxKeep() []bool {
	keep := make([]bool, len(t.entries))
	for i := range keep {
		keep[i] = t.flags[i]&inCtx != 0
	}
	for _, i := range t.ctxPending {
		keep[i] = true
	}
	return keep
}

// dropCycleEntries takes the entries on a parent cycle out of those about to
// be appended to the context file (cycles.go); they stay in the log. t.mu is
// held.
func (t *Tree) dropCycleEntries() {
	if t.cyc.on == nil {
		return
	}
	kept := t.ctxPending[:0]
	for _, i := range t.ctxPending {
		if t.onCycle(i) {
			t.ctxPartial = true // in the log, left out of the context file
			continue
		}
		kept = append(kept, i)
	}
	t.ctxPending = kept
}

// logKeep keeps every entry the log holds: the context file of a path without
// a compaction.
func (t *Tree) logKeep() []bool {
	keep := make([]bool, len(t.entries))
	for i := range keep {
		keep[i] = t.flags[i]&inLog != 0
	}
	return keep
}

// contextKeep decides what the rewritten context file holds, given the last
// compaction C on the active path P (ok is false when there is none):
//
//   - the entries of P from C.firstKeptEntryId (or from C when that id is not
//     before C on P) to the leaf — exactly the entries whose messages Pi emits
//     (C with the system message it recorded, and every context edit that
//     counts), with their parent links back to the first kept entry intact;
//   - every entry that follows C in order (other branches grown since);
//   - the last thinking_level_change and model_change on P before the kept range,
//     for inspection (Pi's walk does not reach them in the context file alone;
//     the log keeps the full path, see MergeLog).
//
// Only entries already in the log are kept (the log is always written first).
func (t *Tree) contextKeep() ([]bool, bool) {
	if t.leaf < 0 {
		return nil, false
	}
	path := pi.PathTo(t.entries, t.byID, t.leaf)
	c := -1
	for k, i := range path {
		if t.entries[i].Type() == pi.TypeCompaction {
			c = k
		}
	}
	if c < 0 {
		return nil, false
	}
	first, _ := t.entries[path[c]].StringField("firstKeptEntryId")
	start := c
	for k, i := range path[:c] {
		if t.entries[i].ID() == first {
			start = k
			break
		}
	}
	keep := make([]bool, len(t.entries))
	for _, i := range path[start:] {
		keep[i] = true
	}
	for i := path[c] + 1; i < len(t.entries); i++ {
		keep[i] = true
	}
	lastThink, lastModel := -1, -1
	for _, i := range path[:start] {
		switch t.entries[i].Type() {
		case pi.TypeThinkingLevelChange:
			lastThink = i
		case pi.TypeModelChange:
			lastModel = i
		}
	}
	for _, i := range []int{lastThink, lastModel} {
		if i >= 0 {
			keep[i] = true
		}
	}
	for i := range keep {
		if t.flags[i]&inLog == 0 {
			keep[i] = false
		}
	}
	return keep, true
}
