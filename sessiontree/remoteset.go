package sessiontree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// SegmentsSuffix names the file, beside the context and log files, that lists the
// store's segments whose entries the local files hold ({sessionId}.segments), so
// that SyncFromRemote after a restart fetches only what is new.
const SegmentsSuffix = ".segments"

// IncrementalReader is a RemoteReader that can read only the segments a reader
// does not hold yet (transcript.Store is one). With it, SyncFromRemote costs what
// is new rather than the whole session.
type IncrementalReader interface {
	RemoteReader
	// ReadNew lists ref and fetches the segments that have does not hold (see
	// transcript.Store.ReadNew).
	ReadNew(ctx context.Context, ref transcript.TranscriptRef, have transcript.SegmentSet) (*transcript.Increment, error)
}

// remoteState is what a tree knows of the store's segments.
type remoteState struct {
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

// segmentsPath is the path of the tree's segments file.
func (t *Tree) segmentsPath() string {
	return strings.TrimSuffix(t.ctxPath, ContextSuffix) + SegmentsSuffix
}

// remoteHave returns the segments the tree holds, reading the segments file the
// first time for a tree loaded from local files. t.mu is held.
func (t *Tree) remoteHave() transcript.SegmentSet {
	if !t.remote.loaded {
		t.remote.loaded = true
		if t.remote.fromFiles {
			f := readSegmentsFile(t.segmentsPath())
			t.remote.have, t.remote.frontier = f.have, f.frontier
		}
	}
	return t.remote.have
}

// syncIncremental is SyncFromRemote with a reader that fetches only what is new.
// t.ioMu is held.
func (t *Tree) syncIncremental(ctx context.Context, r IncrementalReader) (LoadReport, error) {
	t.mu.Lock()
	have := t.remoteHave()
	t.mu.Unlock()
	inc, err := r.ReadNew(ctx, t.ref, have)
	if errors.Is(err, bucket.ErrNotFound) {
		return LoadReport{}, nil
	}
	if err != nil {
		return LoadReport{}, fmt.Errorf("sync %s from remote: %w", t.ref, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	origins := make([]transcript.Origin, len(inc.Entries))
	for i, e := range inc.Entries {
		origins[i] = e.Origin
	}
	rep := t.mergeRemote(inc.Raw(), origins)
	// The new set is kept even when it names the same segments: it carries when
	// the next sync lists the whole session (see transcript.Store.ReadNew). Only a
	// change of the segments is worth writing down; a restarted tree lists the
	// whole session once anyway.
	if inc.Changed(have) {
		t.remote.dirty = true
	}
	t.remote.have = inc.Have
	return rep, t.saveRemoteSet()
}

// saveRemoteSet writes the segments file when the set changed and every entry
// the tree holds is in the local files (else a later flush writes it). The file is
// written without fsync: it only saves fetches, a stale or lost one costs a fuller
// read, and a torn one fails its checksum and counts as empty. It is written only
// after the local files are fsynced, so it never names a segment whose entries
// they lack. t.mu is held.
func (t *Tree) saveRemoteSet() error {
	if !t.remote.dirty || len(t.pendingLocal) > 0 || !t.headerInLog ||
		!t.remote.fromFiles && !t.remote.checked {
		return nil
	}
	f := segmentsFile{have: t.remote.have, frontier: t.remote.frontier, leafKnown: true, sizes: t.localSizes()}
	if t.leaf >= 0 {
		f.leaf = t.entries[t.leaf].ID()
	}
	if err := writeSegmentsFile(t.segmentsPath(), f); err != nil {
		return fmt.Errorf("save segments of %s: %w", t.ref, err)
	}
	t.remote.dirty = false
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
	return sizesLine(size(t.logPath), size(t.ctxPath))
}

// sizesLine is the line of a segments file that records the sizes of the log
// and the context file (-1 for a missing one).
func sizesLine(logSize, ctxSize int64) string {
	return fmt.Sprintf("files %d %d", logSize, ctxSize)
}

// SegmentsFileCurrent reports whether a segments file lies beside the local files
// and was written for them as they are now (their sizes are the ones it records):
// then the files hold every entry of the segments it names and nothing written
// since. A tool that rebuilds the files from the store (transcript restore) syncs
// such files incrementally instead of fetching the whole session.
func (t *Tree) SegmentsFileCurrent() bool {
	f := readSegmentsFile(t.segmentsPath())
	return f.sizes != "" && f.sizes == t.localSizes()
}

// RemoteSegments returns how many of the store's segments the tree knows it holds
// (0 before the first sync, and when the segments file beside the local files is
// missing or damaged).
func (t *Tree) RemoteSegments() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.remoteHave().Len()
}

// afterLocalFlush runs after the local files were written: the first time, for a
// tree that did not load them, it removes a segments file left behind by earlier
// files of the session (it would claim entries these files lack); then it saves
// the set if it is due. t.mu is held.
func (t *Tree) afterLocalFlush() error {
	if !t.remote.fromFiles && !t.remote.checked && t.headerInLog {
		if err := os.Remove(t.segmentsPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("flush %s: remove stale segments file: %w", t.ref, err)
		}
		t.remote.checked = true
	}
	return t.saveRemoteSet()
}

// SegmentsPath returns the path of the segments file beside the local files (see
// SegmentsSuffix).
func (t *Tree) SegmentsPath() string { return t.segmentsPath() }
