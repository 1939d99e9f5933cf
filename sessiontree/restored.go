package sessiontree

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// RestoredSession is what WriteRestoredLean wrote.
type RestoredSession struct {
	// Files are the paths of the local files WriteRestoredLean wrote.
	Files Files
	// Entries is the number of Pi entries written (the header not counted).
	Entries int
	// Size is the size in bytes of each of the two files (they are equal).
	Size int64
}

// ErrNoHeader is returned by WriteRestoredLean for a session that holds no
// session header (a Tree cannot be restored from it either).
var ErrNoHeader = errors.New("no session header")

// RawKind is what a raw line read from the store is to a Tree (ClassifyRaw).
type RawKind uint8

// The kinds of ClassifyRaw.
const (
	RawEntry   RawKind = iota // a Pi entry that can be on a path
	RawLeaf                   // a "leaf" entry (never on a path)
	RawHeader                 // a session header
	RawInvalid                // neither: a Tree skips it
)

// ClassifyRaw tells what raw is to a Tree that reads it from the store, with the
// rules of Pull (a header if pi.ParseHeader accepts it, else an entry
// if ParseEntry does, else skipped), parsing it once: the two parsers accept
// disjoint sets (a header's type is "session", which ParseEntry refuses), so the
// header parser runs only on what ParseEntry refused. The error is ParseEntry's,
// for RawInvalid.
func ClassifyRaw(raw []byte) (RawKind, error) {
	e, err := ParseEntry(raw)
	if err == nil {
		if e.Type() == pi.TypeLeaf {
			return RawLeaf, nil
		}
		return RawEntry, nil
	}
	if _, herr := pi.ParseHeader(raw); herr == nil {
		return RawHeader, nil
	}
	return RawInvalid, err
}

// WriteRestoredLean writes the local files of a session read with Store.ReadLean
// without building a Tree, so that a session of any size is restored at the
// memory of its bytes: the log and the context file each hold the first session
// header of res, then every entry a Tree accepts (ClassifyRaw) in merge order,
// each followed by "\n" (fsynced unless Config.NoSync), and the segments file
// names res.Held(), the segments whose entries they hold, with the origin of
// each entry (so that a Tree loaded from them orders what it pulls later as
// ReadAll does, see canonical.go). That is what Restore
// followed by Flush writes. Like Restore, it refuses to run when the context file
// exists. A session without a header is ErrNoHeader, and nothing is written.
func WriteRestoredLean(cfg Config, who Identity, agentID, sessionID string, res *transcript.LeanResult) (RestoredSession, error) {
	kinds := make([]RawKind, res.Len())
	header, n := -1, 0
	for i := range kinds {
		kinds[i], _ = ClassifyRaw(res.Raw(i))
		switch kinds[i] {
		case RawHeader:
			if header < 0 {
				header = i
			}
		case RawEntry, RawLeaf:
			n++
		}
	}
	if header < 0 {
		ref, _ := who.Ref(agentID, sessionID)
		return RestoredSession{}, fmt.Errorf("restore %s: %w", ref, ErrNoHeader)
	}
	lines := func(yield func([]byte) bool) {
		if !yield(res.Raw(header)) {
			return
		}
		for i, k := range kinds {
			if (k == RawEntry || k == RawLeaf) && !yield(res.Raw(i)) {
				return
			}
		}
	}
	// The origin records, one per entry written, grouped by origin key in key
	// order (as originLogOf groups them) and streamed to the origins file: at
	// is the merge index of each, put in that order (stable: merge order within
	// a key).
	at := make([]int32, 0, n)
	for i, k := range kinds {
		if k == RawEntry || k == RawLeaf {
			at = append(at, int32(i))
		}
	}
	slices.SortStableFunc(at, func(a, b int32) int { return strings.Compare(res.Origin(int(a)).Key, res.Origin(int(b)).Key) })
	origins := func(yield func(originRecord) bool) {
		for _, i := range at {
			raw := res.Raw(int(i))
			if !yield(originRecord{id: res.ID(int(i)), origin: res.Origin(int(i)), sum: xxhash.Sum64(raw)}) {
				return
			}
		}
	}
	files, size, err := writeRestored(cfg, who, agentID, sessionID, lines, segmentsFile{have: res.Held()}, origins)
	return RestoredSession{Files: files, Entries: n, Size: size}, err
}

// writeRestored writes the log and the context file, each holding lines, the
// origins file with origins (already grouped by key, streamed: see
// writeOriginsGrouped), and then seg, the segments file (its sizes and origins
// filled in); it returns the size of each file.
func writeRestored(cfg Config, who Identity, agentID, sessionID string, lines iter.Seq[[]byte], seg segmentsFile, origins iter.Seq[originRecord]) (Files, int64, error) {
	t, err := newTree(cfg, who, agentID, sessionID)
	if err != nil {
		return Files{}, 0, err
	}
	files := t.files
	if _, err := os.Stat(t.files.Context); err == nil {
		return files, 0, fmt.Errorf("restore %s: local file %s exists", t.ref, t.files.Context)
	}
	if err := os.MkdirAll(filepath.Dir(t.files.Log), 0o755); err != nil {
		return files, 0, fmt.Errorf("restore %s: create session directory: %w", t.ref, err)
	}
	// A segments file left behind describes files that are gone.
	if err := os.Remove(files.Segments); err != nil && !os.IsNotExist(err) {
		return files, 0, fmt.Errorf("restore %s: remove stale segments file: %w", t.ref, err)
	}
	size, err := writeLines([]string{t.files.Log, t.files.Context}, lines, cfg.NoSync)
	if err != nil {
		return files, 0, fmt.Errorf("restore %s: %w", t.ref, err)
	}
	// The sizes are those just written: no need to stat the files again.
	seg.sizes = sizesLine(size, size)
	if seg.originsSize, seg.originsSum, err = writeOriginsGrouped(files.Origins, origins, cfg.NoSync); err != nil {
		return files, 0, fmt.Errorf("save origins of %s: %w", t.ref, err)
	}
	if err := writeSegmentsFile(files.Segments, seg); err != nil {
		return files, 0, fmt.Errorf("save segments of %s: %w", t.ref, err)
	}
	return files, size, nil
}

// writeOriginsGrouped writes the origins file at path (atomically, fsynced
// unless noSync) with the records of origins, which come grouped by origin key
// in key order: the bytes originLogOf would give for them, written through a
// buffer of restoreChunk instead of held whole (a long session's records are a
// third of its JSONL). It returns the file's size and xxhash64.
func writeOriginsGrouped(path string, origins iter.Seq[originRecord], noSync bool) (size int64, sum uint64, err error) {
	err = fsutil.WriteFileAtomic(path, noSync, func(w io.Writer) error {
		d := xxhash.New()
		bw := bufio.NewWriterSize(io.MultiWriter(w, d), restoreChunk)
		bw.WriteString(originsHeader + "\n")
		size = int64(len(originsHeader) + 1)
		var l originLog
		flush := func() {
			bw.Write(l.pending)
			size += int64(len(l.pending))
			l.pending = l.pending[:0]
		}
		for r := range origins {
			l.add(r.id, r.origin, r.sum)
			if len(l.pending) >= restoreChunk/2 {
				flush()
			}
		}
		flush()
		if err := bw.Flush(); err != nil { // the first write error, kept by the writer
			return err
		}
		sum = d.Sum64()
		return nil
	})
	return size, sum, err
}

// restoreChunk is the size of the buffer writeLines writes through.
const restoreChunk = 1 << 20

// writeLines creates each file of paths, in order (the log before the context
// file, as a Flush writes them), with lines, each followed by "\n", and fsyncs
// it unless noSync; it returns the size of each. When the lines fit in
// restoreChunk they are copied once into a buffer written to every file;
// otherwise each file is written through a buffered writer of that size.
func writeLines(paths []string, lines iter.Seq[[]byte], noSync bool) (int64, error) {
	var size int64
	for l := range lines {
		size += int64(len(l)) + 1
	}
	var whole []byte
	if size <= restoreChunk {
		whole = make([]byte, 0, size)
		for l := range lines {
			whole = append(append(whole, l...), '\n')
		}
	}
	for _, path := range paths {
		err := writeFile(path, noSync, func(f *os.File) error {
			if whole != nil {
				_, err := f.Write(whole)
				return err
			}
			w := bufio.NewWriterSize(f, restoreChunk)
			for l := range lines {
				w.Write(l)
				w.WriteByte('\n')
			}
			return w.Flush() // the first write error, kept by the writer
		})
		if err != nil {
			return 0, err
		}
	}
	return size, nil
}

// writeFile creates path with what write writes and fsyncs it unless noSync.
func writeFile(path string, noSync bool, write func(f *os.File) error) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	return nil
}
