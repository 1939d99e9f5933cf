package sessiontree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/transcriptstore/transcript/transcript"
)

// storeState is what a tree knows of the store's segments.
type storeState struct {
	// fromFiles: the tree was loaded from local files, so the segments file beside
	// them (read lazily) describes them. A tree that starts without local files
	// ignores any segments file left behind.
	fromFiles bool
	loaded    bool
	have      transcript.SegmentSet
	// dirty: have changed since the segments file was written; it is written once
	// every entry it covers is in the local files.
	dirty bool
	// checked: a segments file left beside local files this tree did not load
	// has been removed (it describes files that are gone).
	checked bool
	// frontier is the greatest origin of the store's entries the tree merged
	// from increments (zero when unknown): an entry of a later increment whose
	// origin sorts before it comes before some entry the tree holds in the
	// store's merge order, so it does not move the active leaf (see moveLeaf).
	frontier transcript.Origin
}

// storedHave returns the segments the tree holds, reading the segments file the
// first time for a tree loaded from local files. t.mu is held.
func (t *Tree) storedHave() transcript.SegmentSet {
	if !t.stored.loaded {
		t.stored.loaded = true
		if t.stored.fromFiles {
			f := readSegmentsFile(t.files.Segments)
			t.stored.have, t.stored.frontier = f.have, f.frontier
		}
	}
	return t.stored.have
}

// saveStoredSet writes the segments file when the set changed and every entry
// the tree holds is in the local files (else a later flush writes it). The file is
// written without fsync: it only saves fetches, a stale or lost one costs a fuller
// read, and a torn one fails its checksum and counts as empty. It is written only
// after the local files are fsynced, so it never names a segment whose entries
// they lack. t.mu is held.
func (t *Tree) saveStoredSet() error {
	if !t.stored.dirty || len(t.pendingLocal) > 0 || !t.headerInLog ||
		!t.stored.fromFiles && !t.stored.checked {
		return nil
	}
	f := segmentsFile{have: t.stored.have, frontier: t.stored.frontier, leafKnown: true, sizes: t.localSizes()}
	if t.leaf >= 0 {
		f.leaf = t.entries[t.leaf].ID()
	}
	if err := writeSegmentsFile(t.files.Segments, f); err != nil {
		return fmt.Errorf("save segments of %s: %w", t.ref, err)
	}
	t.stored.dirty = false
	return nil
}

// localSizes returns the sizes of the log and context files ("-1 -1" when one
// cannot be read), as a segments file records them.
func (t *Tree) localSizes() string {
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			return -1
		}
		return st.Size()
	}
	return sizesLine(size(t.files.Log), size(t.files.Context))
}

// sizesLine is the line of a segments file that records the sizes of the log
// and the context file (-1 for a missing one).
func sizesLine(logSize, ctxSize int64) string {
	return fmt.Sprintf("files %d %d", logSize, ctxSize)
}

// SegmentsFileCurrent reports whether a segments file lies beside the local files
// and was written for them as they are now (their sizes are the ones it records):
// then the files hold every entry of the segments it names and nothing written
// since. A tool that rebuilds the files from the store (transcript restore) pulls
// such files incrementally instead of fetching the whole session.
func (t *Tree) SegmentsFileCurrent() bool {
	f := readSegmentsFile(t.files.Segments)
	return f.sizes != "" && f.sizes == t.localSizes()
}

// HeldSegments returns how many of the store's segments the tree knows it holds
// (0 before the first pull, and when the segments file beside the local files is
// missing or damaged).
func (t *Tree) HeldSegments() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.storedHave().Len()
}

// afterLocalFlush runs after the local files were written: the first time, for a
// tree that did not load them, it removes a segments file left behind by earlier
// files of the session (it would claim entries these files lack); then it saves
// the set if it is due. t.mu is held.
func (t *Tree) afterLocalFlush() error {
	if !t.stored.fromFiles && !t.stored.checked && t.headerInLog {
		if err := os.Remove(t.files.Segments); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("flush %s: remove stale segments file: %w", t.ref, err)
		}
		t.stored.checked = true
	}
	return t.saveStoredSet()
}

// SegmentsPath returns the path of the segments file beside the local files (see
// Files.Segments).
func (t *Tree) SegmentsPath() string { return t.files.Segments }
