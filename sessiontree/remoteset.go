package sessiontree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/transcript"
)

// SegmentsSuffix names the file, beside the context and log files, that lists the
// store's segments whose entries the local files hold ({sessionId}.segments), so
// that SyncFromRemote after a restart fetches only what is new.
const SegmentsSuffix = ".segments"

// segmentsHeader is the first line of a segments file; segmentsHeaderV1 that of
// a file written before the frontier line existed (still read).
const (
	segmentsHeader   = "transcript-segments 2"
	segmentsHeaderV1 = "transcript-segments 1"
)

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
			t.remote.have, t.remote.frontier, _ = readSegmentsFile(t.segmentsPath())
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
	if errors.Is(err, ErrNotFound) {
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
	if err := writeSegmentsFile(t.segmentsPath(), t.remote.have, t.remote.frontier, t.localSizes()); err != nil {
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
	return fmt.Sprintf("files %d %d", size(t.logPath), size(t.ctxPath))
}

// writeSegmentsFile replaces path with the set: a header line, a line with the
// sizes of the local files it describes (see localSizes), a line with the
// frontier origin ("frontier {pos} {key}", or "frontier -" when unknown), one
// relative key per line, and a line with the xxhash64 of everything before it.
func writeSegmentsFile(path string, set transcript.SegmentSet, frontier transcript.Origin, sizes string) error {
	var buf bytes.Buffer
	buf.WriteString(segmentsHeader + "\n")
	buf.WriteString(sizes + "\n")
	if frontier.Key == "" {
		buf.WriteString(frontierPrefix + "-\n")
	} else {
		fmt.Fprintf(&buf, "%s%d %s\n", frontierPrefix, frontier.Pos, frontier.Key)
	}
	for _, k := range set.Keys() {
		buf.WriteString(k)
		buf.WriteByte('\n')
	}
	fmt.Fprintf(&buf, "xxh64 %016x\n", xxhash.Sum64(buf.Bytes()))
	return fsutil.WriteFileAtomic(path, true, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
}

// frontierPrefix starts the frontier line of a segments file.
const frontierPrefix = "frontier "

// readSegmentsFile reads a segments file, its frontier origin and the file sizes
// it records; a missing, unreadable or damaged one is the empty set (the next
// sync reads more, never less). A version 1 file has no frontier (zero).
func readSegmentsFile(path string) (transcript.SegmentSet, transcript.Origin, string) {
	var none transcript.Origin
	data, err := os.ReadFile(path)
	if err != nil {
		return transcript.SegmentSet{}, none, ""
	}
	body, sum, ok := cutChecksumLine(data)
	if !ok || fmt.Sprintf("%016x", xxhash.Sum64(body)) != sum {
		return transcript.SegmentSet{}, none, ""
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	if !sc.Scan() {
		return transcript.SegmentSet{}, none, ""
	}
	version := sc.Text()
	if version != segmentsHeader && version != segmentsHeaderV1 || !sc.Scan() || !strings.HasPrefix(sc.Text(), "files ") {
		return transcript.SegmentSet{}, none, ""
	}
	sizes := sc.Text()
	var frontier transcript.Origin
	if version == segmentsHeader {
		f, ok := sc.Scan(), false
		if f {
			frontier, ok = parseFrontier(sc.Text())
		}
		if !ok {
			return transcript.SegmentSet{}, none, ""
		}
	}
	var keys []string
	for sc.Scan() {
		if k := sc.Text(); k != "" {
			keys = append(keys, k)
		}
	}
	return transcript.NewSegmentSet(keys...), frontier, sizes
}

// parseFrontier parses a frontier line (see writeSegmentsFile).
func parseFrontier(line string) (transcript.Origin, bool) {
	rest, ok := strings.CutPrefix(line, frontierPrefix)
	if !ok {
		return transcript.Origin{}, false
	}
	if rest == "-" {
		return transcript.Origin{}, true
	}
	pos, key, ok := strings.Cut(rest, " ")
	n, err := strconv.Atoi(pos)
	if !ok || err != nil || n < 0 || key == "" {
		return transcript.Origin{}, false
	}
	return transcript.Origin{Key: key, Pos: n}, true
}

// SegmentsFileCurrent reports whether a segments file lies beside the local files
// and was written for them as they are now (their sizes are the ones it records):
// then the files hold every entry of the segments it names and nothing written
// since. A tool that rebuilds the files from the store (transcript restore) syncs
// such files incrementally instead of fetching the whole session.
func (t *Tree) SegmentsFileCurrent() bool {
	_, _, sizes := readSegmentsFile(t.segmentsPath())
	return sizes != "" && sizes == t.localSizes()
}

// cutChecksumLine splits data into what precedes its last line and the checksum
// that line ("xxh64 {hex}\n") holds.
func cutChecksumLine(data []byte) ([]byte, string, bool) {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil, "", false
	}
	i := bytes.LastIndexByte(data[:len(data)-1], '\n')
	if i < 0 {
		return nil, "", false
	}
	sum, ok := strings.CutPrefix(string(data[i+1:len(data)-1]), "xxh64 ")
	return data[:i+1], sum, ok
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
