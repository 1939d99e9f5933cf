package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// readLean reads the session named by the flags with Store.ReadLean (the same
// entries and order as ReadAll, at a fraction of the memory), a strict session
// as its head commits it (sessionReader); a session without segments is an
// error that says "not found".
func (f *storeFlags) readLean(ctx context.Context, cmd string) (*transcript.LeanResult, transcript.TranscriptRef, error) {
	ref, err := f.ref(cmd)
	if err != nil {
		return nil, ref, err
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return nil, ref, err
	}
	defer s.Close()
	tightenGC(oneSessionGCPercent)
	res, err := newSessionReader(s, ref).ReadLean(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, ref, errSessionNotFound(ref)
	}
	if err == nil {
		boundHeap(res.Size())
	}
	return res, ref.Norm(), err
}

// lostEntries warns on stderr of the parents that entries of res name and no
// segment holds: what cmd printed of session ref lacks them, and a context
// built from it starts after the gap. A segment lost from the bucket, or from
// a copy of it, leaves such parents, and so does a writer (Pi 0.58's
// createBranchedSession leaves the children of the labels it drops without
// their parent): nothing in the bucket tells the two apart, so the warning
// does not fail the command; transcript verify reports them as problems.
func lostEntries(env *cliEnv, cmd string, ref transcript.TranscriptRef, res *transcript.LeanResult) {
	lost := lostParentsLean(res)
	if len(lost) == 0 {
		return
	}
	quoted := make([]string, min(len(lost), 10))
	for i := range quoted {
		quoted[i] = strconv.QuoteToASCII(lost[i]) // no control or format character reaches the terminal
	}
	if len(lost) > len(quoted) {
		quoted = append(quoted, fmt.Sprintf("and %d more", len(lost)-len(quoted)))
	}
	fmt.Fprintf(env.stderr, "%s: warning: session %s: entries name parents no segment holds (a segment lost from the bucket, "+
		"or written so), so this lacks them: %s; transcript verify names what is missing\n", cmd, cmdcli.Escape(ref.String()), strings.Join(quoted, ", "))
}

// What an entry of a merged session is to Pi (leanSession.kind).
const (
	kindEntry   uint8 = iota // a Pi entry that can be on a path
	kindLeaf                 // a "leaf" entry (never on a path)
	kindHeader               // a session header
	kindInvalid              // neither: skipped, as a SessionTree skips it
)

// leanSession is a merged session (LeanResult) as Pi sees it: which entries are
// headers, which are entries and which are skipped. Entries are parsed again
// when needed instead of being held (pi.Entry is several times the size of the
// bytes it describes).
type leanSession struct {
	res    *transcript.LeanResult
	kind   []uint8
	header int // merge index of the first session header; -1 for none
	n      int // Pi entries (kindEntry and kindLeaf)
	// omit, when not nil, marks the Pi entries writeExport leaves out
	// (leaveOutCycles).
	omit []bool
}

// newLeanSession classifies the entries of res; skipped, when not nil, is told
// of every entry that is neither a header nor a Pi entry, in order.
func newLeanSession(res *transcript.LeanResult, skipped func(id string, err error)) *leanSession {
	return leanSessionOf(res, func(i int) (sessiontree.RawKind, error) { return sessiontree.ClassifyRaw(res.Raw(i)) }, skipped)
}

// leanSessionOf is newLeanSession with the kind of entry i given by kindOf.
func leanSessionOf(res *transcript.LeanResult, kindOf func(i int) (sessiontree.RawKind, error), skipped func(id string, err error)) *leanSession {
	s := &leanSession{res: res, kind: make([]uint8, res.Len()), header: -1}
	for i := range s.kind {
		kind, err := kindOf(i)
		switch kind {
		case sessiontree.RawHeader:
			s.kind[i] = kindHeader
			if s.header < 0 {
				s.header = i
			}
			continue
		case sessiontree.RawInvalid:
			s.kind[i] = kindInvalid
			if skipped != nil {
				skipped(res.ID(i), err)
			}
			continue
		case sessiontree.RawLeaf:
			s.kind[i] = kindLeaf
		}
		s.n++
	}
	return s
}

// entries yields the bytes of every Pi entry (kindEntry and kindLeaf) that
// writeExport writes, in order.
func (s *leanSession) entries() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for i := range s.kind {
			if s.isPi(i) && (s.omit == nil || !s.omit[i]) && !yield(s.res.Raw(i)) {
				return
			}
		}
	}
}

// writeExport writes the session as a Pi version 3 file (as Tree.Export does
// after a restore): the first header, then every Pi entry in merge order, each
// followed by "\n". ok is false, and nothing is written, without a header.
func (s *leanSession) writeExport(w io.Writer) (ok bool, err error) {
	return s.writeExportFrom(w, func(idx []int, fn func(i int, e transcript.ResolvedEntry) error) error {
		return transcript.EachPlain(idx, s.res.Raw, fn)
	})
}

// writeExportResolved is writeExport of a session read as stored, each entry's
// payloads put back by src as it is written; sessiontree.ErrNotPlain when an entry's
// payloads could change its kind (see sessiontree.ClassifyStored).
func (s *leanSession) writeExportResolved(ctx context.Context, w io.Writer, src sessiontree.PayloadSource, ref transcript.TranscriptRef) (ok bool, err error) {
	return s.writeExportFrom(w, func(idx []int, fn func(i int, e transcript.ResolvedEntry) error) error {
		return src.EachResolved(ctx, ref, s.res, idx, fn)
	})
}

// writeExportFrom is writeExport with the bytes of the entries idx given by
// each, in that order.
func (s *leanSession) writeExportFrom(w io.Writer, each func(idx []int, fn func(i int, e transcript.ResolvedEntry) error) error) (ok bool, err error) {
	if s.header < 0 {
		return false, nil
	}
	idx := []int{s.header}
	for i := range s.kind {
		if s.isPi(i) && (s.omit == nil || !s.omit[i]) {
			idx = append(idx, i)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	err = each(idx, func(_ int, e transcript.ResolvedEntry) error {
		if !e.Plain {
			return sessiontree.ErrNotPlain
		}
		for _, p := range e.Pieces {
			bw.Write(p)
		}
		return bw.WriteByte('\n') // the first write error, kept by the writer
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return true, fmt.Errorf("write session: %w", err)
	}
	return true, nil
}

// isPi reports whether entry i is a Pi entry (kindEntry or kindLeaf): a line of
// the files written of the session.
func (s *leanSession) isPi(i int) bool { return s.kind[i] == kindEntry || s.kind[i] == kindLeaf }

// leaveOutCycles makes writeExport leave out the Pi entries that lie on a
// parent cycle as Pi follows parentId (sessiontree.OnParentCycleLean: a "leaf" entry is a
// parent to Pi too, and an entry naming itself is a cycle of one), and returns
// their ids in merge order (none for most sessions). Pi cannot open a file
// that holds them (see pi/cycles.go); their descendants stay, a child of one
// then naming a parent the file lacks, which Pi takes as a root.
func (s *leanSession) leaveOutCycles() []string {
	on := sessiontree.OnParentCycleLean(s.res, s.isPi)
	var ids []string
	for i, c := range on {
		if c && s.isPi(i) {
			ids = append(ids, s.res.ID(i))
		}
	}
	s.omit = on
	return ids
}

// The pi.Tree of the session: the tree rules (the active leaf, the path to the
// root) are pi's, applied to entries parsed only when a rule reads them.

// Len returns the number of merged entries.
func (s *leanSession) Len() int { return len(s.kind) }

// Kind says whether entry i is a Pi entry, a "leaf" entry or neither.
func (s *leanSession) Kind(i int) pi.Kind {
	switch s.kind[i] {
	case kindEntry:
		return pi.KindEntry
	case kindLeaf:
		return pi.KindLeaf
	}
	return pi.KindNone
}

// Entry parses entry i (a kindEntry or kindLeaf).
func (s *leanSession) Entry(i int) pi.Entry {
	e, _ := pi.ParseEntry(s.res.Raw(i))
	return e
}

// Find returns the merge index of the entry id.
func (s *leanSession) Find(id string) (int, bool) { return s.res.Index(id) }

// Parent returns the merge index of the entry the parentId of entry i names.
func (s *leanSession) Parent(i int) (int, bool) { return s.res.Parent(i) }

// has reports whether id names a Pi entry of the session ("leaf" entries too).
func (s *leanSession) has(id string) bool {
	i, ok := s.res.Index(id)
	return ok && (s.kind[i] == kindEntry || s.kind[i] == kindLeaf)
}

// writeContext writes the context at leafID ("" for the active leaf; see
// pi.ResolveLeafOf) as JSON and a newline, streamed (pi.WriteContextPath).
func (s *leanSession) writeContext(w io.Writer, leafID string) error {
	var want *string
	if leafID != "" {
		want = &leafID
	}
	leaf, ok := pi.ResolveLeafOf(s, want)
	if !ok {
		return pi.WriteContextPath(w, 0, nil)
	}
	path := pi.PathOf(s, leaf)
	return pi.WriteContextPath(w, len(path), func(k int) pi.Entry { return s.Entry(path[k]) })
}

// leanReader reads a session lean, with its payloads or as stored and then
// puts the payloads back entry by entry (transcript.Store and
// transcript.Listed do).
type leanReader interface {
	ReadLean(ctx context.Context, ref transcript.TranscriptRef) (*transcript.LeanResult, error)
	ReadLeanStored(ctx context.Context, ref transcript.TranscriptRef) (*transcript.LeanResult, error)
	sessiontree.PayloadSource
}

// restoredSession is a session whose local files restoreLean wrote.
type restoredSession struct {
	files   sessiontree.Files
	entries int                  // Pi entries, the header not counted
	has     func(id string) bool // whether the session has a Pi entry of that id
	lost    []string             // parents entries name and no segment holds (lostParentsLean)
}

// restoreLean rebuilds ref from the store into local files under root, as
// sessiontree.Restore and a Flush do, from a lean read of the session as stored
// and without a SessionTree (sessiontree.WriteRestoredStored, which puts the
// payloads back as it writes each entry): its memory is bounded by the
// session's stored bytes and the window of payloads fetched ahead (see
// boundHeap).
func restoreLean(ctx context.Context, s sessiontree.StoreReader, ref transcript.TranscriptRef, root string) (restoredSession, error) {
	lr, ok := s.(leanReader)
	if !ok {
		return restoredSession{}, fmt.Errorf("restore %s: %T cannot read a session lean", ref, s)
	}
	res, err := lr.ReadLeanStored(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return restoredSession{}, fmt.Errorf("%w (or it has no session header)", errSessionNotFound(ref))
	}
	if err != nil {
		return restoredSession{}, err
	}
	boundHeap(res.Size() + payloadWindow(res))
	who := sessiontree.Identity{Namespace: ref.Namespace}
	r, err := sessiontree.WriteRestoredStored(ctx, sessiontree.Config{Root: root}, who, ref.AgentID, ref.SessionID, res, lr)
	if errors.Is(err, sessiontree.ErrNoHeader) {
		return restoredSession{}, fmt.Errorf("%w (or it has no session header)", errSessionNotFound(ref))
	}
	if err != nil {
		return restoredSession{}, err
	}
	// has is asked only when the destination already holds a log (rare): the
	// entries are classified again then, not for every session, as stored (as
	// WriteRestoredStored classifies them but for a session no writer of this
	// module makes, see there).
	var sess *leanSession
	has := func(id string) bool {
		if sess == nil {
			sess = newLeanSession(res, nil)
		}
		return sess.has(id)
	}
	return restoredSession{files: r.Files, entries: r.Entries, has: has, lost: lostParentsLean(res)}, nil
}

// payloadWindow is what a restore of res holds of payloads at once beside res:
// the window of transcript.Store.EachResolved, or the size of the payloads
// res references when that is smaller (0 for a session without references).
func payloadWindow(res *transcript.LeanResult) int64 {
	var n int64
	for i := range res.Len() {
		for _, r := range res.Refs(i) {
			if n += int64(r.Size); n >= transcript.DefaultResolveWindow {
				return transcript.DefaultResolveWindow
			}
		}
	}
	return n
}

// sameFile reports whether the files at a and b hold the same bytes; a missing b
// is false, without an error. It reads both in pieces.
func sameFile(a, b string) (bool, error) {
	same, err := fsutil.SameContent(a, b)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(b); errors.Is(serr, os.ErrNotExist) {
			return false, nil
		}
	}
	return same, err
}
