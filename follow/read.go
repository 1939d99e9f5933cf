package follow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// batch is what one read of a file gives: the lines to hand over as one
// segment, and where the file's offset moves once they are handed over.
type batch struct {
	t       *tracked
	entries [][]byte   // the lines to hand over, without their newlines
	links   []pi.Links // links[i] is what pi.ParseLinks read of entries[i]
	// lines counts the complete lines read; stored those the store or the
	// uploader held already; bytes the bytes of entries.
	lines, stored int
	bytes         int64
	to            int64         // the offset after the last complete line read
	digest        xxhash.Digest // of the file's first `to` bytes
	anchor        span          // the end of the last line read
	// more: the read stopped at Config.MaxBatchBytes before the file's end.
	more bool
	err  error // the hand-over's error
}

// read looks at a file once: it notices a removal or a rewrite, classifies a
// new file, starts a reconcile, and reads the complete lines past the file's
// offset. It returns nil when there is nothing to hand over or commit.
func (f *Follower) read(ctx context.Context, t *tracked) (*batch, error) {
	// Stat before opening: opening a named pipe would block until a writer
	// comes.
	st, err := os.Stat(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.removed(t)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if t.failWhy != "" {
		t.observe(st)
		f.setKind(t, classification{kind: kindFailed, why: t.failWhy})
		return nil, nil
	}
	if t.ignoreWhy != "" || !st.Mode().IsRegular() {
		t.observe(st)
		why := t.ignoreWhy
		if why == "" {
			why = irregular(t.path, st)
		}
		f.setKind(t, classification{kind: kindIgnored, why: why})
		return nil, nil
	}
	fh, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		f.removed(t)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if st, err = fh.Stat(); err != nil {
		return nil, err
	}
	t.observe(st)
	if !st.Mode().IsRegular() {
		f.setKind(t, classification{kind: kindIgnored, why: irregular(t.path, st)})
		return nil, nil
	}
	switch t.kind {
	case kindLegacy, kindIgnored, kindFailed:
		if !t.reclassify(st) {
			return nil, nil
		}
		t.startOver()
	case kindFollowing:
		if why := t.rewritten(fh, st); why != "" {
			f.emit(Event{Kind: EventRewritten, File: t.rel, Session: t.ref, Offset: t.offset,
				Message: why + ": reading it again from its start, uploading only what the store lacks"})
			t.startOver()
		}
	}
	if t.kind == kindNew {
		if err := f.classifyFile(t, fh, st); err != nil || t.kind != kindFollowing {
			return nil, err
		}
	}
	if f.bucketMissing && t.kind == kindFollowing {
		return nil, nil // read again once the bucket is back (nobucket.go)
	}
	if t.reconcile {
		if err := f.loadHeld(ctx, t); f.waitBucket(ctx, err) || err != nil || t.kind != kindFollowing {
			return nil, f.unlessNoBucket(err)
		}
	}
	b, err := f.readLines(t, fh, st.Size())
	audit := t.audit
	t.audit = false
	handing := b != nil && len(b.entries) > 0
	if err != nil || t.held != nil || t.offset == 0 || !handing && !t.unsure && !audit {
		return b, err
	}
	unsure := t.unsure
	held := f.checkHeld(ctx, t)
	if f.bucketMissing {
		return nil, nil // the file was taken back to its start (nobucket.go)
	}
	switch held {
	case holdsUnknown:
		// Hand the lines over all the same (the uploader rides out an
		// outage), and look again once the store answers.
		t.unsure = t.unsure || handing
		t.audit = audit && !t.unsure
		if (t.unsure || t.audit) && !f.once {
			t.schedule(f.cfg.Now().Add(f.cfg.RescanInterval))
		}
		return b, nil
	case holdsSession:
		if audit {
			f.noteRetention(ctx, t)
		}
		if !t.unsure {
			return b, nil
		}
		// Lines were handed over while the store could not say whether it
		// held the session: reconcile, in case it had lost its start.
		t.unsure = false
	case lostSession:
		if audit && !handing && t.retiring {
			// Deleted by the retention that marked it, not by the emptying:
			// left deleted while the file does not grow.
			return b, nil
		}
		t.retiring = false
		f.emit(Event{Kind: EventRewritten, File: t.rel, Session: t.ref, Offset: t.offset,
			Message: fmt.Sprintf("the store and the uploader no longer hold session %s with its header, whose first %d bytes were handed over (the bucket or its prefix emptied, or the session deleted?): uploading the whole file again, header first", t.ref, t.offset)})
		t.offset, t.anchor, t.unsure = 0, span{}, false
		t.digest.Reset()
		f.settleAgain()
		if !audit { // an audit asks about every file already
			f.lookForLoss(ctx)
		}
	}
	t.reconcile = true
	if err := f.loadHeld(ctx, t); f.waitBucket(ctx, err) || err != nil || t.kind != kindFollowing {
		return nil, f.unlessNoBucket(err)
	}
	if unsure && t.offset == 0 {
		// The store lost the session's start while it could not answer (its
		// bucket gone?): if it lost the follower's marker, it lost every other
		// session too, though what the uploader held back may have landed
		// meanwhile.
		f.lookForLoss(ctx)
	}
	return f.readLines(t, fh, st.Size())
}

// storeHolds is what checkHeld found.
type storeHolds int

const (
	holdsSession storeHolds = iota // the uploader or the store holds the session
	lostSession                    // neither holds anything of it
	holdsUnknown                   // the store could not be asked
)

// storeCheckTimeout bounds checkHeld's question to the store: a store that
// does not answer within it is taken as not answering now.
const storeCheckTimeout = 5 * time.Second

// checkHeld asks whether the uploader or the store still holds t's session,
// which lines of t were handed over to before: neither does when the store
// lost them (its bucket deleted and created again, its prefix deleted). The
// uploader holds it when it holds its header (the session's first segment
// waits there); later lines it holds do not count, as the store may have lost
// what came before them. Only a
// Store that is a SessionChecker is asked (cheaply); with another, the
// session counts as held. A store that failed to answer is not asked again
// for a rescan interval: every file's answer is holdsUnknown meanwhile, so an
// outage does not hold up every read.
func (f *Follower) checkHeld(ctx context.Context, t *tracked) storeHolds {
	c, ok := f.cfg.Store.(SessionChecker)
	if !ok {
		return holdsSession
	}
	pending, err := f.cfg.Uploader.Pending(ctx, t.ref)
	switch {
	case err != nil:
		return holdsUnknown
	case holdsHeader(pending):
		// The session's start waits in the uploader: first, or behind later
		// lines handed over while the store was down, when a refill after
		// the store came back empty handed the header over after them.
		return holdsSession
	case f.cfg.Now().Before(f.storeQuietUntil):
		return holdsUnknown
	}
	cctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	exists, err := c.SessionExists(cctx, t.ref)
	switch {
	case f.bucketGone(ctx, err):
		return holdsUnknown
	case err != nil:
		f.storeQuietUntil = f.cfg.Now().Add(f.cfg.RescanInterval)
		return holdsUnknown
	case exists:
		return holdsSession
	}
	return lostSession
}

// auditAll schedules every followed file some of whose lines were handed
// over for a read that asks whether the store still holds its session, and
// returns how many it scheduled.
func (f *Follower) auditAll() int {
	now := f.cfg.Now()
	n := 0
	for _, t := range f.files {
		if auditable(t) {
			t.audit = true
			t.schedule(now)
			n++
		}
	}
	if n > 0 {
		f.dirty = true
	}
	return n
}

// anyAuditable reports whether checkHeld may be asked about any file.
func (f *Follower) anyAuditable() bool {
	for _, t := range f.files {
		if auditable(t) {
			return true
		}
	}
	return false
}

// auditable reports whether checkHeld may be asked about t: a followed file
// some of whose lines were handed over, with no reconcile or audit under way.
func auditable(t *tracked) bool {
	return t.kind == kindFollowing && t.offset > 0 && !t.reconcile && t.held == nil && !t.audit
}

// irregular says what the entry at p, which st (followed through links)
// shows is not a regular file, is: why it is ignored.
func irregular(p string, st fs.FileInfo) string {
	var what string
	switch m := st.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "an irregular file"
	}
	if lst, err := os.Lstat(p); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		what = "a symbolic link to " + what
	}
	return what + ": not a session file"
}

// classifyFile reads a new file's first line and makes it a followed session
// file, a legacy file, an ignored file or a failed one; while its first line is
// not complete, the file stays new.
func (f *Follower) classifyFile(t *tracked, fh io.ReaderAt, st fs.FileInfo) error {
	if !strings.HasSuffix(t.rel, ".jsonl") {
		f.setKind(t, classification{kind: kindIgnored, why: "not a .jsonl file"})
		return nil
	}
	line, ok, err := firstLine(fh, st.Size())
	switch {
	case errors.Is(err, errHeaderTooLong):
		f.setKind(t, classification{kind: kindIgnored, why: "not a Pi session file: " + err.Error()})
		return nil
	case err != nil:
		return err
	case !ok:
		return nil // Pi is still writing it
	}
	c := classify(line)
	if c.kind != kindFollowing {
		f.setKind(t, c)
		return nil
	}
	ref, err := sessionRef(f.cfg.Namespace, f.cfg.Agent, f.rootBase, t.rel, c.header.ID())
	if err != nil {
		f.setKind(t, classification{kind: kindFailed, why: "cannot name its session: " + err.Error()})
		return nil
	}
	t.kind, t.ref, t.headerID, t.ino = kindFollowing, ref, c.header.ID(), inodeOf(st)
	t.header = span{n: int64(len(line)), sum: xxhash.Sum64(line)}
	t.reconcile = true
	t.classified()
	return nil
}

// setKind makes t a legacy, ignored or failed file and reports it (once per
// reason).
func (f *Follower) setKind(t *tracked, c classification) {
	t.kind = c.kind
	t.classified()
	kind := map[fileKind]EventKind{kindLegacy: EventLegacy, kindIgnored: EventIgnored, kindFailed: EventStuck}[c.kind]
	if c.kind == kindFailed {
		t.stuck = c.why
	}
	f.warn(t, kind, c.why, Event{Message: c.why})
}

// loadHeld starts a reconcile of t: it reads what the uploader and the store
// hold of its session (heldOf), checks the session's header against the
// file's, and keeps the ids and the hashes of their bytes for readLines to
// skip.
//
// When neither holds the file's header (the store lost the session) and the
// uploader holds later lines, those lines are taken back from the uploader
// (dropQueued) and handed over again with the refill, so that they land in
// the file's order, behind the header.
func (f *Follower) loadHeld(ctx context.Context, t *tracked) error {
	handed := t.offset // dropQueued moves it back to 0
	var held map[string]uint64
	for retook := false; ; retook = true {
		stored, pending, h, err := f.heldOf(ctx, t)
		if err != nil {
			return err
		}
		// Taking lines back cannot make a conflict: it is looked for once.
		if !retook && f.conflicts(ctx, t, stored, pending) {
			return nil
		}
		held = h
		if _, ok := held[t.headerID]; ok || len(pending) == 0 || retook || !f.dropQueued(ctx, t) {
			break
		}
	}
	if _, ok := held[t.headerID]; !ok && handed > 0 {
		f.emit(Event{Kind: EventRewritten, File: t.rel, Session: t.ref, Offset: handed,
			Message: "the store and the uploader lack lines handed over before (a lost outbox, an emptied bucket?): reading the file again from its start, uploading only what the store lacks"})
		t.offset, t.anchor = 0, span{}
		t.digest.Reset()
		f.lookForLoss(ctx)
	}
	t.held, t.reconcile, t.unsure = held, false, false
	return nil
}

// conflicts reports whether the session the store and the uploader hold
// (stored, pending) has another header than t's file, or entries ahead of a
// header that is not the file's: t is then failed and reported, and nothing
// of it is uploaded.
func (f *Follower) conflicts(ctx context.Context, t *tracked, stored, pending [][]byte) bool {
	first := stored
	if len(first) == 0 {
		first = pending
	}
	if len(first) == 0 {
		return false
	}
	h, err := pi.ParseHeader(first[0])
	var why string
	switch {
	case err != nil && !holdsHeader(stored, pending):
		// Entries but no header at all: what an outbox uploaded after the
		// store lost the session's start (its bucket emptied under it). The
		// file's header and what the session lacks are uploaded below
		// (the ids it holds with other bytes are conflicts, line by line).
		// If the store lost the follower's marker, it lost every other
		// session then too, though it holds this one's later lines: ask
		// about every file.
		if len(stored) > 0 {
			f.lookForLoss(ctx)
		}
	case err != nil && holdsOwnHeader(t, stored, pending):
		// The file's own header, behind later lines: this follower's
		// refill after the store came back empty while those lines
		// waited in the uploader. Not a second header.
	case err != nil:
		why = fmt.Sprintf("session %s exists without a session header first: its header would be a second one", t.ref)
	case h.ID() != t.headerID:
		why = fmt.Sprintf("session %s holds header %s, the file's is %s: another session under the same name", t.ref, strconv.Quote(h.ID()), strconv.Quote(t.headerID))
	case xxhash.Sum64(first[0]) != t.header.sum:
		why = fmt.Sprintf("session %s holds header %s with other bytes", t.ref, strconv.Quote(h.ID()))
	}
	if why == "" {
		return false
	}
	f.countConflict()
	t.kind, t.stuck = kindFailed, why
	f.warn(t, EventConflict, why, Event{Message: why + ": nothing of the file is uploaded"})
	return true
}

// heldOf reads what the uploader holds of t's session, then what the store
// holds (in that order: an entry leaves the uploader only once the store has
// it, so it is found in one or the other), and maps the ids of both to the
// hash of their bytes.
func (f *Follower) heldOf(ctx context.Context, t *tracked) (stored, pending [][]byte, held map[string]uint64, err error) {
	pending, err = f.cfg.Uploader.Pending(ctx, t.ref)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read what the uploader holds of %s: %w", t.ref, err)
	}
	stored, err = f.cfg.Store.Entries(ctx, t.ref)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read session %s: %w", t.ref, err)
	}
	held = make(map[string]uint64, len(stored)+len(pending))
	for _, raws := range [][][]byte{stored, pending} {
		for _, raw := range raws {
			if e, err := transcript.ParseEntry(raw); err == nil {
				if _, ok := held[e.ID]; !ok {
					held[e.ID] = xxhash.Sum64(raw)
				}
			}
		}
	}
	return stored, pending, held, nil
}

// dropQueued takes back from the uploader, when it is a QueueDropper and no
// other file maps to t's session, the lines of t it holds: t's session lost
// its header, and the refill that follows hands the whole file over again. First the state file is made to
// say that nothing of t is handed over (its offset 0: the file leaves the
// state), so that a crash after the lines are taken back and before the
// refill is accepted reconciles the whole file at the next start. It reports
// whether it asked the uploader (what the uploader holds then changed); an
// uploader that did not answer in storeCheckTimeout keeps what it did not
// take back, which the refill then skips as held.
func (f *Follower) dropQueued(ctx context.Context, t *tracked) bool {
	d, ok := f.cfg.Uploader.(QueueDropper)
	if !ok {
		return false
	}
	for _, o := range f.files {
		if o != t && o.kind == kindFollowing && o.ref == t.ref {
			// Another file of the session (a copy of t beside it): the
			// uploader's lines may be that file's, which t's refill does
			// not carry.
			return false
		}
	}
	t.offset, t.anchor = 0, span{}
	t.digest.Reset()
	if err := f.save(); err != nil {
		f.emit(Event{Kind: EventError, File: t.rel, Session: t.ref,
			Message: fmt.Sprintf("write the state file: %v: the lines the uploader holds of the session stay there, ahead of the refill", err)})
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	if _, err := d.DropQueued(cctx, t.ref); err != nil {
		f.emit(Event{Kind: EventError, File: t.rel, Session: t.ref,
			Message: fmt.Sprintf("take back the lines the uploader holds of session %s before its refill: %v", t.ref, err)})
	}
	return true
}

// readLines reads the complete lines of t past its offset, at most
// Config.MaxBatchBytes (more when one line is longer, up to the entry limit),
// and makes them a batch: blank lines are skipped, and so are lines that are
// not entries or are over the entry limit (reported), lines held already during
// a reconcile, and lines whose id is held with other bytes (reported as
// conflicts). A line longer than the window is read on in pieces to its
// newline (readLong), so that one over the entry limit is never held whole.
func (f *Follower) readLines(t *tracked, fh io.ReaderAt, size int64) (*batch, error) {
	start := t.offset
	avail := size - start
	if avail <= 0 {
		if t.held != nil || t.uploading != 0 {
			t.held, t.uploading, f.dirty = nil, 0, true
		}
		t.tornAt = -1
		return nil, nil
	}
	buf := make([]byte, min(avail, int64(f.cfg.MaxBatchBytes)))
	k, err := fh.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:k]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return f.readLong(t, fh, start, size, buf)
	}
	return f.lines(t, buf[:end+1], start, size, int64(len(buf)) < avail), nil
}

// lines makes a batch of chunk, the complete lines of t from offset start
// (size is the file's); more says that the file holds complete lines past
// them.
func (f *Follower) lines(t *tracked, chunk []byte, start, size int64, more bool) *batch {
	b := &batch{t: t, to: start + int64(len(chunk)), digest: t.digest, more: more}
	b.digest.Write(chunk)
	last := bytes.LastIndexByte(chunk[:len(chunk)-1], '\n') + 1
	a := max(last, len(chunk)-anchorMax)
	b.anchor = span{off: start + int64(a), n: int64(len(chunk) - a), sum: xxhash.Sum64(chunk[a:])}
	for pos := 0; pos < len(chunk); {
		nl := bytes.IndexByte(chunk[pos:], '\n')
		f.takeLine(b, chunk[pos:pos+nl], start+int64(pos))
		pos += nl + 1
	}
	if b.to < size {
		f.torn(t, b.to)
	} else {
		t.tornAt = -1
	}
	return b
}

// scanChunk is the size of the pieces in which readLong looks for the end of a
// long line.
const scanChunk = 1 << 20

// readLong reads the line at start, whose first len(head) bytes (no newline
// among them) were read: it reads on, a piece at a time, to the line's
// newline. A line up to the entry limit is then read whole and made a batch;
// a longer one is skipped, never held whole: the batch holds no entry and
// moves the file's offset past the line, which is reported. A line without
// its newline yet is a torn line like any other, over the limit or not: it
// waits for its newline (and is reported stuck after Config.StuckAfter).
func (f *Follower) readLong(t *tracked, fh io.ReaderAt, start, size int64, head []byte) (*batch, error) {
	digest := t.digest
	digest.Write(head)
	nl, err := scanNewline(fh, start+int64(len(head)), size, &digest)
	if err != nil {
		return nil, err
	}
	if nl < 0 {
		f.torn(t, start)
		return nil, nil
	}
	to := nl + 1
	if nl-start <= f.maxEntry {
		line := make([]byte, to-start)
		if err := readLine(fh, line, start); err != nil {
			return nil, err
		}
		return f.lines(t, line, start, size, to < size), nil
	}
	a := max(start, to-anchorMax)
	tail := make([]byte, to-a)
	if err := readLine(fh, tail, a); err != nil {
		return nil, err
	}
	b := &batch{t: t, lines: 1, to: to, digest: digest, more: to < size,
		anchor: span{off: a, n: to - a, sum: xxhash.Sum64(tail)}}
	f.malformed(t, start, nl-start, f.overLimit())
	if to < size {
		f.torn(t, to)
	} else {
		t.tornAt = -1
	}
	return b, nil
}

// readLine reads len(buf) bytes of fh at off, which must end with the newline
// a scan found there.
func readLine(fh io.ReaderAt, buf []byte, off int64) error {
	if _, err := fh.ReadAt(buf, off); err != nil {
		return fmt.Errorf("read the line ending at offset %d: %w", off+int64(len(buf))-1, err)
	}
	if buf[len(buf)-1] != '\n' {
		return fmt.Errorf("the line ending at offset %d changed while it was read", off+int64(len(buf))-1)
	}
	return nil
}

// scanNewline returns the offset of the first newline of fh at or past from
// and before size (-1 if there is none), reading scanChunk bytes at a time; it
// writes the bytes it passes, up to and including that newline, to digest.
func scanNewline(fh io.ReaderAt, from, size int64, digest *xxhash.Digest) (int64, error) {
	buf := make([]byte, min(scanChunk, max(size-from, 0)))
	for pos := from; pos < size; {
		k, err := fh.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if i := bytes.IndexByte(buf[:k], '\n'); i >= 0 {
			digest.Write(buf[:i+1])
			return pos + int64(i), nil
		}
		digest.Write(buf[:k])
		switch {
		case errors.Is(err, io.EOF) || err == nil && k == 0:
			return -1, nil // the file is shorter than its stat said
		case err != nil:
			return -1, err
		}
		pos += int64(k)
	}
	return -1, nil
}

// overLimit is why a line over the entry limit is skipped.
func (f *Follower) overLimit() string {
	return fmt.Sprintf("as the store cannot hold it: over its entry limit (%d bytes)", f.maxEntry)
}

// malformed reports the line at offset off, of n bytes, skipped for why
// (once per offset).
func (f *Follower) malformed(t *tracked, off, n int64, why string) {
	f.countMalformed()
	f.warn(t, EventMalformed, fmt.Sprintf("malformed@%d", off), Event{Offset: off,
		Message: fmt.Sprintf("line at offset %d (%d bytes) skipped, %s", off, n, why)})
}

// takeLine adds the line at offset off to b, or skips it (see readLines).
func (f *Follower) takeLine(b *batch, line []byte, off int64) {
	t := b.t
	b.lines++
	if len(bytes.TrimSpace(line)) == 0 {
		return // Pi skips blank lines too
	}
	if int64(len(line)) > f.maxEntry {
		f.malformed(t, off, int64(len(line)), f.overLimit())
		return
	}
	var why string
	e, err := pi.ParseLinks(line)
	switch {
	case err != nil:
		why = err.Error()
	case off > 0 && isHeader(line):
		why = "a second session header"
	}
	if why != "" {
		f.malformed(t, off, int64(len(line)), "as Pi skips it: "+why)
		return
	}
	if t.held != nil {
		if sum, ok := t.held[e.ID]; ok {
			if sum == xxhash.Sum64(line) {
				b.stored++
				return
			}
			f.countConflict()
			f.warn(t, EventConflict, "conflict@"+e.ID, Event{Offset: off,
				Message: fmt.Sprintf("the store holds entry %s with other bytes: line at offset %d not uploaded", strconv.Quote(e.ID), off)})
			return
		}
	}
	b.entries = append(b.entries, line)
	b.links = append(b.links, e)
	b.bytes += int64(len(line))
}

// holdsHeader reports whether any of the entries of lists is a session
// header.
func holdsHeader(lists ...[][]byte) bool {
	for _, l := range lists {
		if slices.ContainsFunc(l, isHeader) {
			return true
		}
	}
	return false
}

// holdsOwnHeader reports whether a line of lists is t's own session header:
// its id and bytes.
func holdsOwnHeader(t *tracked, lists ...[][]byte) bool {
	for _, l := range lists {
		for _, line := range l {
			if h, err := pi.ParseHeader(line); err == nil && h.ID() == t.headerID && xxhash.Sum64(line) == t.header.sum {
				return true
			}
		}
	}
	return false
}

// isHeader reports whether line is a session header.
func isHeader(line []byte) bool {
	_, err := pi.ParseHeader(line)
	return err == nil
}

// torn records that t ends in an unterminated line at offset at.
func (f *Follower) torn(t *tracked, at int64) {
	if t.tornAt != at {
		t.tornAt, t.tornSince = at, f.cfg.Now()
	}
}
