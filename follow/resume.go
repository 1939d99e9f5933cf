package follow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cespare/xxhash/v2"
)

// resume reads the state file and takes up each file it names where it was
// left (see New).
func (f *Follower) resume() error {
	f.id = f.cfg.FollowerID
	if f.id == "" {
		f.id = newFollowerID() // unless the state names one
	}
	doc, err := readState(f.statePath())
	if errors.Is(err, errCorruptState) {
		aside, merr := moveAside(f.statePath(), f.cfg.Now().UTC().Format("20060102T150405.000000000"))
		if merr != nil {
			return fmt.Errorf("%w (and moving it aside: %w)", err, merr)
		}
		f.emit(Event{Kind: EventError, Message: fmt.Sprintf("%v: moved aside to %s; every file is reconciled against the store", err, aside)})
		return nil
	}
	if err != nil {
		return err
	}
	copied := false
	switch {
	case doc.Follower != "" && f.cfg.FollowerID != "":
		// The id is given: the state's says whether the store held the
		// marker only when it is the same one.
		f.lostAt, f.auditedAt = doc.LostAt, doc.AuditedAt
		f.marked = doc.Follower == f.id && doc.Marked && (doc.MarkedIn == "" || doc.MarkedIn == f.cfg.Namespace)
		f.bucketMissing = f.marked && doc.NoBucket
	case doc.Follower != "":
		f.id, f.lostAt, f.auditedAt = doc.Follower, doc.LostAt, doc.AuditedAt
		// A marker put in another namespace (--ns changed) is no sign that
		// this one's store was emptied: its marker is put anew.
		f.marked = doc.Marked && (doc.MarkedIn == "" || doc.MarkedIn == f.cfg.Namespace)
		f.bucketMissing = f.marked && doc.NoBucket
		if why := f.place.movedFrom(doc); why != "" {
			// A copy of another follower's state: sharing its id, only the
			// first of them to look after an emptying would find the marker
			// gone. The store may have lost sessions since the copy was
			// made, so every file is asked about.
			old := f.id
			f.id, f.marked, copied = newFollowerID(), false, true
			f.emit(Event{Kind: EventCopied, Message: fmt.Sprintf("the state file was written elsewhere (%s): a copy, "+
				"so this follower takes an id of its own, %s (the state's was %s), and asks whether the store holds the session of each file handed over",
				why, f.id, old)})
		}
	}
	if doc.Host != f.place.Host || doc.Machine != f.place.ID || doc.StateDir != f.place.stateDir {
		f.dirty = true // record where the state lives now
	}
	if doc.Root != "" && doc.Root != f.cfg.Root {
		f.emit(Event{Kind: EventError, Message: fmt.Sprintf("the state file is of root %s, not %s: every file is reconciled against the store", doc.Root, f.cfg.Root)})
		return nil
	}
	now := f.cfg.Now()
	for rel, st := range doc.Files {
		t := newTracked(f.cfg.Root, rel)
		f.files[rel] = t
		t.schedule(now)
		if err := f.take(t, st); err != nil {
			f.emit(Event{Kind: EventError, File: rel, Session: st.ref(), Message: fmt.Sprintf("resume: %v: reconciling it against the store", err)})
		}
		if copied && auditable(t) {
			t.audit = true
		}
	}
	return nil
}

// take resumes t from what the state file says of it: when the file still
// holds the bytes the state's checksum covers (read again here), under the same
// inode and session, t follows it from the state's offset (and reconciles what
// lies past it when an intent or a reconcile was left); otherwise t stays new,
// to be classified and reconciled from its start. A file that is gone is
// reported removed.
func (f *Follower) take(t *tracked, st *fileState) error {
	fh, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		t.kind, t.ref = kindFollowing, st.ref()
		f.removed(t)
		return nil
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return err
	}
	t.observe(info)
	if !info.Mode().IsRegular() {
		return nil
	}
	changed := func(why string) error {
		f.emit(Event{Kind: EventRewritten, File: t.rel, Session: st.ref(), Offset: st.Offset,
			Message: why + " while no follower ran: reading it again from its start, uploading only what the store lacks"})
		return nil
	}
	if st.Inode != 0 && inodeOf(info) != st.Inode {
		return changed("replaced by another file")
	}
	if info.Size() < st.Offset {
		return changed(fmt.Sprintf("truncated to %d bytes, below the %d read", info.Size(), st.Offset))
	}
	if st.Offset == 0 {
		// Nothing of it was handed over but an intent (a crash during its first
		// hand-over): like a file the state does not name, it is classified and
		// reconciled from its start by its next read.
		return nil
	}
	p, err := readPrefix(fh, st.Offset)
	if err != nil {
		return err
	}
	if fmt.Sprintf("%016x", p.digest.Sum64()) != st.Sum || !p.lineEnd {
		return changed(fmt.Sprintf("its first %d bytes changed", st.Offset))
	}
	c := classify(p.header)
	if c.kind != kindFollowing {
		return nil // classified (and reported) by its next read
	}
	ref, err := sessionRef(f.cfg.Namespace, f.cfg.Agent, f.rootBase, t.rel, c.header.ID())
	if err != nil || ref != st.ref() {
		f.emit(Event{Kind: EventRewritten, File: t.rel, Session: st.ref(), Offset: st.Offset,
			Message: fmt.Sprintf("it maps to session %s now (other --ns or --agent): reconciling it against that session from its start", ref)})
		return nil
	}
	t.kind, t.ref, t.headerID, t.ino = kindFollowing, ref, c.header.ID(), inodeOf(info)
	t.header = span{n: int64(len(p.header)), sum: xxhash.Sum64(p.header)}
	t.offset, t.digest, t.anchor = st.Offset, p.digest, p.anchor
	t.uploading = st.Uploading
	t.reconcile = st.Uploading != 0 || st.Reconcile
	t.audit = st.Audit && !t.reconcile
	t.retiring = st.Retiring
	t.classified()
	return nil
}

// prefix is what readPrefix found in a file's first bytes.
type prefix struct {
	digest xxhash.Digest
	header []byte // the first line, without its newline
	anchor span   // the end of the last line
	// lineEnd: the prefix ends with a newline.
	lineEnd bool
}

// readPrefix reads the first n bytes of fh in pieces: their xxhash64, the
// first line, and the anchor of the last line. An empty prefix (n <= 0) ends
// where a line starts, and has no header and no anchor.
func readPrefix(fh io.ReaderAt, n int64) (prefix, error) {
	var p prefix
	p.digest.Reset()
	if n <= 0 {
		p.lineEnd = true
		return p, nil
	}
	buf := make([]byte, 1<<20)
	lastNL := int64(-1) // the last newline before the final byte
	for pos := int64(0); pos < n; {
		k, err := fh.ReadAt(buf[:min(int64(len(buf)), n-pos)], pos)
		if k == 0 && err != nil {
			return p, err
		}
		chunk := buf[:k]
		p.digest.Write(chunk)
		if p.header == nil {
			if i := bytes.IndexByte(chunk, '\n'); i >= 0 && pos == 0 {
				p.header = bytes.Clone(chunk[:i])
			}
		}
		if lim := min(int64(k), n-1-pos); lim > 0 {
			if i := bytes.LastIndexByte(chunk[:lim], '\n'); i >= 0 {
				lastNL = pos + int64(i)
			}
		}
		pos += int64(k)
	}
	end := make([]byte, 1)
	if _, err := fh.ReadAt(end, n-1); err != nil {
		return p, err
	}
	p.lineEnd = end[0] == '\n'
	a := max(lastNL+1, n-anchorMax)
	tail := make([]byte, n-a)
	if _, err := fh.ReadAt(tail, a); err != nil {
		return p, err
	}
	p.anchor = span{off: a, n: n - a, sum: xxhash.Sum64(tail)}
	return p, nil
}
