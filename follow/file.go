package follow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// fileKind is what the follower makes of a file.
type fileKind int

const (
	// kindNew: not classified yet (its first line is not complete), or to be
	// classified again.
	kindNew fileKind = iota
	// kindFollowing: a Pi version 3 session file whose lines are uploaded.
	kindFollowing
	// kindLegacy: a Pi version 1 or 2 file, waiting for Pi to migrate it.
	kindLegacy
	// kindIgnored: not a Pi session file.
	kindIgnored
	// kindFailed: a session file that cannot be followed (its header conflicts
	// with the store, or its session cannot be named).
	kindFailed
)

// The bounds of reading a file's first line and the bytes that anchor a
// file's offset.
const (
	// maxHeaderScan is the longest first line read as a header (as Pi bounds
	// its own header scan).
	maxHeaderScan = 1 << 20
	// anchorMax is the most bytes of the last line before a file's offset whose
	// hash is checked before each read (a rewrite in place changes them).
	anchorMax = 4096
)

// span is a byte range of a file and the xxhash64 of its bytes.
type span struct {
	off, n int64
	sum    uint64
}

// matches reports whether f still holds the bytes of s.
func (s span) matches(f io.ReaderAt) bool {
	if s.n == 0 {
		return true
	}
	buf := make([]byte, s.n)
	if _, err := f.ReadAt(buf, s.off); err != nil {
		return false
	}
	return xxhash.Sum64(buf) == s.sum
}

// tracked is one file under the root.
type tracked struct {
	rel  string // path relative to the root, slash-separated
	path string // absolute path
	kind fileKind
	// ignoreWhy, when not "", is why the walk ignores the entry without
	// opening it (a symbolic link to a directory it does not follow).
	ignoreWhy string
	// failWhy, when not "", is why the walk cannot follow the entry at all
	// (a folder it may not list): the entry is reported stuck without being
	// opened.
	failWhy string
	ref     transcript.TranscriptRef
	// headerID is the id of the file's header (kindFollowing).
	headerID string

	ino    uint64
	offset int64         // bytes of complete lines handed over or skipped
	digest xxhash.Digest // of the first offset bytes
	header span          // the first line, newline included
	anchor span          // the end of the last line before offset

	// uploading is the intent the state file holds: the lines up to there are
	// being handed over (0: none).
	uploading int64
	// reconcile: before the next hand-over, load what the store and the
	// uploader hold (held) and skip what they hold already.
	reconcile bool
	// held maps the ids the store and the uploader hold to the hash of their
	// bytes while a reconcile is in progress (nil otherwise); heldAt is where
	// that reconcile started.
	held map[string]uint64
	// unsure: lines were handed over while the store could not say whether
	// it still held the session (see Follower.checkHeld); the next read that
	// finds it answering reconciles.
	unsure bool
	// audit: the next read asks whether the store still holds the session,
	// even when the file did not grow (Follower.lookForLoss).
	audit bool
	// retiring: while the follower asks about every file again after a lost
	// marker, the store held the session with a retention mark when last
	// asked: found gone later, it was deleted by retention (marker.go).
	retiring bool

	// What the last stat showed, and what it showed when the file was classified
	// (a legacy, ignored or failed file is classified again when it changes).
	seenSize, classSize int64
	seenMod, classMod   time.Time
	seenIno, classIno   uint64

	due          time.Time // when to read next (zero: not scheduled)
	behindSince  time.Time // since when the file holds bytes past offset
	tornAt       int64     // offset of an unterminated last line (-1: none)
	tornSince    time.Time
	failingSince time.Time // since when reads or uploads fail (zero: they do not)
	failures     int
	stuck        string // why the file is stuck ("" if it is not)
	// reported holds the warnings reported for this file, so that each is
	// reported once.
	reported map[string]bool
}

func newTracked(root, rel string) *tracked {
	t := &tracked{rel: rel, path: filepath.Join(root, filepath.FromSlash(rel)), tornAt: -1, reported: map[string]bool{}}
	t.digest.Reset() // a zero Digest is not a valid one
	return t
}

// schedule makes the file due at at, unless it is due earlier.
func (t *tracked) schedule(at time.Time) {
	if t.due.IsZero() || at.Before(t.due) {
		t.due = at
	}
}

// observe records what a stat showed and whether it differs from the last one.
func (t *tracked) observe(st fs.FileInfo) (changed bool) {
	ino := inodeOf(st)
	changed = st.Size() != t.seenSize || !st.ModTime().Equal(t.seenMod) || ino != t.seenIno
	t.seenSize, t.seenMod, t.seenIno = st.Size(), st.ModTime(), ino
	return changed
}

// startOver forgets what was read of the file: it is classified and read
// again from its start, reconciling against the store.
func (t *tracked) startOver() {
	t.kind = kindNew
	t.offset = 0
	t.digest.Reset()
	t.header, t.anchor = span{}, span{}
	t.held = nil
	t.unsure, t.audit = false, false
	t.tornAt = -1
}

// reclassify reports whether a legacy, ignored or failed file changed enough
// since it was classified to be classified again: a legacy file on any change
// (Pi rewrites it when it migrates it), the others when replaced or truncated.
func (t *tracked) reclassify(st fs.FileInfo) bool {
	replaced := inodeOf(st) != t.classIno || st.Size() < t.classSize
	if t.kind == kindLegacy {
		return replaced || st.Size() != t.classSize || !st.ModTime().Equal(t.classMod)
	}
	return replaced
}

// classified records the last stat (observe) as the one the classification saw.
func (t *tracked) classified() {
	t.classSize, t.classMod, t.classIno = t.seenSize, t.seenMod, t.seenIno
}

// rewritten reports why the file no longer holds what the follower read of
// it ("" if it does): another file under its name, truncated, or the bytes of
// its header or of its last line before offset changed.
func (t *tracked) rewritten(f io.ReaderAt, st fs.FileInfo) string {
	switch {
	case t.ino != 0 && inodeOf(st) != t.ino:
		return "replaced by another file"
	case st.Size() < t.offset:
		return fmt.Sprintf("truncated to %d bytes, below the %d read", st.Size(), t.offset)
	case !t.header.matches(f):
		return "its header line changed"
	case !t.anchor.matches(f):
		return fmt.Sprintf("its bytes before offset %d changed", t.offset)
	}
	return ""
}

// firstLine reads the file's first line (without its newline). ok is false
// while it is not complete.
func firstLine(f io.ReaderAt, size int64) (line []byte, ok bool, err error) {
	buf := make([]byte, min(size, maxHeaderScan))
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, false, err
	}
	i := bytes.IndexByte(buf[:n], '\n')
	if i < 0 {
		if size >= maxHeaderScan {
			return nil, false, errHeaderTooLong
		}
		return nil, false, nil
	}
	return buf[:i], true, nil
}

// errHeaderTooLong: a first line longer than maxHeaderScan is no Pi header.
var errHeaderTooLong = fmt.Errorf("its first line is over %d bytes", maxHeaderScan)

// classification is what the first line of a file says it is.
type classification struct {
	kind   fileKind
	header pi.Header
	why    string // for kindIgnored, kindLegacy, kindFailed
}

// classify tells a Pi version 3 session file from a legacy one and from a
// file of another program by its first line.
func classify(line []byte) classification {
	h, err := pi.ParseHeader(line)
	switch {
	case err != nil:
		return classification{kind: kindIgnored, why: fmt.Sprintf("not a Pi session file: %v", err)}
	case h.Version() < pi.CurrentVersion:
		return classification{kind: kindLegacy, header: h, why: fmt.Sprintf(
			"a Pi session file of version %d: waiting for Pi to migrate it (Pi rewrites it as version %d when it opens it; transcript import stores a file nobody will open again)",
			h.Version(), pi.CurrentVersion)}
	case h.Version() > pi.CurrentVersion:
		return classification{kind: kindIgnored, header: h, why: fmt.Sprintf("a Pi session file of version %d, newer than this follower knows (%d)", h.Version(), pi.CurrentVersion)}
	}
	return classification{kind: kindFollowing, header: h}
}

// sessionRef maps a followed file to its session: the namespace, the agent
// (agent, or the name of the directory holding the file, by PartName) and the
// header's id (by PartName).
func sessionRef(ns, agent, rootBase, rel, headerID string) (transcript.TranscriptRef, error) {
	ref := transcript.TranscriptRef{Namespace: ns, AgentID: agent}
	if agent == "" {
		dir := path.Base(path.Dir(rel))
		if dir == "." {
			dir = rootBase
		}
		a, err := PartName(dir)
		if err != nil {
			return ref, fmt.Errorf("agent of folder %q: %w", dir, err)
		}
		ref.AgentID = a
	}
	sid, err := PartName(headerID)
	if err != nil {
		return ref, fmt.Errorf("session of header id %q: %w", headerID, err)
	}
	ref.SessionID = sid
	return ref, nil
}
