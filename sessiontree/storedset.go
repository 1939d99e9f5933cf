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
	// origins holds, by entry id, the origin of the version the tree holds of
	// each entry it merged from the store (see canonical.go).
	origins map[string]heldOrigin
	// olog is the tree's side of the origins file (originlog.go).
	olog originLog
	// canon is what the last ordering of the whole set found (canonical.go).
	canon canonState
}

// storedHave returns the segments the tree holds, reading the segments file the
// first time for a tree loaded from local files. t.mu is held.
func (t *Tree) storedHave() transcript.SegmentSet {
	if !t.stored.loaded {
		t.stored.loaded = true
		if t.stored.fromFiles {
			f := readSegmentsFile(t.files.Segments)
			f.loadOrigins(t.files.Origins)
			t.loadStoredSet(f)
		}
	}
	return t.stored.have
}

// loadStoredSet takes the set and the origins of f. A file that records no
// origins (written before they were kept), or whose origin of an entry the
// tree holds was written for other bytes, is not used: the next pull reads the
// whole session, which gives every origin again. t.mu is held.
func (t *Tree) loadStoredSet(f segmentsFile) {
	if !f.withOrigins {
		return
	}
	origins := make(map[string]heldOrigin, len(f.origins))
	for _, r := range f.origins {
		origins[r.id] = heldOrigin{origin: r.origin, sum: r.sum}
	}
	t.stored.have, t.stored.origins = f.have, origins
	for i := range t.entries {
		if _, ok := origins[t.entries[i].ID()]; ok {
			if _, ok := t.originOf(i); !ok {
				t.stored.have, t.stored.origins = transcript.SegmentSet{}, nil
				return
			}
		}
	}
	t.stored.olog = originLog{stale: true} // written again, one record per id, before the next append
}

// saveStoredSet writes the segments file when the set changed and every entry
// the tree holds is in the local files (else a later flush writes it). The file is
// written without fsync: it only saves fetches, a stale or lost one costs a fuller
// read, and a torn one fails its checksum and counts as empty. It is written only
// after the local files are fsynced (and rewritten, after a conflict changed the
// version of an entry they hold), so it never names a segment whose entries
// they lack, and after the origins file is brought up to date (saveOrigins), so
// it names only origin records written before it. t.mu is held.
func (t *Tree) saveStoredSet() error {
	if !t.stored.dirty || len(t.pendingLocal) > 0 || len(t.replaced) > 0 || !t.headerInLog ||
		!t.stored.fromFiles && !t.stored.checked {
		return nil
	}
	size, sum, err := t.saveOrigins()
	if err != nil {
		return err
	}
	f := segmentsFile{have: t.stored.have, originsSize: size, originsSum: sum, leafKnown: true, sizes: t.localSizes()}
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
// files of the session (it would claim entries these files lack), and an unsent
// file too unless this tree wrote it (it would name entries of files a crash
// cut short before they were loaded); then it saves the set if it is due. t.mu
// is held.
func (t *Tree) afterLocalFlush() error {
	if !t.stored.fromFiles && !t.stored.checked && t.headerInLog {
		if err := os.Remove(t.files.Segments); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("flush %s: remove stale segments file: %w", t.ref, err)
		}
		if !t.unsentOnDisk {
			if err := os.Remove(t.files.Unsent); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("flush %s: remove stale unsent file: %w", t.ref, err)
			}
		}
		t.stored.checked = true
	}
	return t.saveStoredSet()
}

// SegmentsPath returns the path of the segments file beside the local files (see
// Files.Segments).
func (t *Tree) SegmentsPath() string { return t.files.Segments }

// OriginsPath returns the path of the origins file beside the local files (see
// Files.Origins).
func (t *Tree) OriginsPath() string { return t.files.Origins }
