package sessiontree

import (
	"bufio"
	"context"
	"encoding/json"
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
	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
)

// RestoredSession is what WriteRestoredLean wrote.
type RestoredSession struct {
	// Files are the paths of the local files WriteRestoredLean wrote.
	Files Files
	// Entries is the number of Pi entries written (the header not counted).
	Entries int
	// Size is the size in bytes of the log (the context file's too, unless it
	// leaves out entries on a parent cycle).
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

// PayloadSource puts back the payloads of entries of a LeanResult read as stored
// (transcript.Store.EachResolved, which a transcript.Listed has too): fn is
// called for the entries idx in that order, each with its payloads in place.
type PayloadSource interface {
	EachResolved(ctx context.Context, ref transcript.TranscriptRef, res *transcript.LeanResult, idx []int, fn func(i int, e transcript.ResolvedEntry) error) error
}

// WriteRestoredLean writes the local files of a session read with Store.ReadLean
// without building a Tree, so that a session of any size is restored at the
// memory of its bytes: the log and the context file each hold the first session
// header of res, then every entry a Tree accepts (ClassifyRaw) in merge order,
// each followed by "\n" (fsynced unless Config.NoSync), and the segments file
// names res.Held(), the segments whose entries they hold, with the origin of
// each entry (so that a Tree loaded from them orders what it pulls later as
// ReadAll does, see canonical.go). That is what Restore
// followed by Flush writes (the context file without the entries on a parent
// cycle, see cycles.go). Like Restore, it refuses to run when the context file
// exists. A session without a header is ErrNoHeader, and nothing is written.
// res must hold its payloads (a read that is not Stored); WriteRestoredStored
// takes a session as stored.
func WriteRestoredLean(cfg Config, who Identity, agentID, sessionID string, res *transcript.LeanResult) (RestoredSession, error) {
	return WriteRestoredStored(context.Background(), cfg, who, agentID, sessionID, res, nil)
}

// WriteRestoredStored is WriteRestoredLean of res read through a Stored store
// (payload references in place; a LeanResult without references is taken as
// it is), its payloads put back by src as each entry is written, so that a
// session whose bytes are mostly payloads is restored at the memory of its
// stored form and of src's window, with the fetches overlapping the writes.
// The files are byte for byte those WriteRestoredLean writes from the same
// session read with its payloads.
//
// The entries are classified as stored: a reference stands for the contents of
// a JSON string, so an entry classifies as it does with its payloads as long as
// each payload is such contents (transcript.ResolvedEntry.Plain) and each
// reference is within the value of a top-level field that ClassifyRaw does not
// read (storedKindHolds). A session that breaks either rule, which no writer of
// this module produces, has its payloads put back in memory first and is
// classified resolved, as WriteRestoredLean does.
//
// The log is written once, under a temporary name, then renamed; the context
// file is a copy of it made by the kernel (copy_file_range), also renamed into
// place: a failure while the log is written (a payload missing or corrupt, an
// error of src, the cancellation of ctx) leaves neither file behind, and no
// failure leaves a partial context file that would make the next restore
// refuse to run.
func WriteRestoredStored(ctx context.Context, cfg Config, who Identity, agentID, sessionID string, res *transcript.LeanResult, src PayloadSource) (RestoredSession, error) {
	ref, _ := who.Ref(agentID, sessionID)
	kinds, asStored := ClassifyStored(res)
	if src == nil {
		for i := range kinds {
			if len(res.Refs(i)) > 0 {
				return RestoredSession{}, fmt.Errorf("restore %s: entry %s holds payload references and no source puts them back", ref, res.ID(i))
			}
		}
	}
	each := func(idx []int, fn func(i int, e transcript.ResolvedEntry) error) error {
		if src == nil {
			return transcript.EachPlain(idx, res.Raw, fn)
		}
		return src.EachResolved(ctx, ref, res, idx, fn)
	}
	if asStored {
		r, err := writeRestoredKinds(cfg, who, agentID, sessionID, res, kinds, each)
		if !errors.Is(err, ErrNotPlain) {
			return r, err
		}
	}
	// Classified resolved: every payload put back in memory first.
	resolved := map[int][]byte{}
	var withRefs []int
	for i := range kinds {
		if len(res.Refs(i)) > 0 {
			withRefs = append(withRefs, i)
		}
	}
	err := each(withRefs, func(i int, e transcript.ResolvedEntry) error {
		resolved[i] = slices.Clone(e.Bytes())
		return nil
	})
	if err != nil {
		return RestoredSession{}, fmt.Errorf("restore %s: %w", ref, err)
	}
	raw := func(i int) []byte {
		if b, ok := resolved[i]; ok {
			return b
		}
		return res.Raw(i)
	}
	for i := range kinds {
		kinds[i], _ = ClassifyRaw(raw(i))
	}
	return writeRestoredKinds(cfg, who, agentID, sessionID, res, kinds, func(idx []int, fn func(i int, e transcript.ResolvedEntry) error) error {
		return transcript.EachPlain(idx, raw, fn)
	})
}

// ClassifyStored classifies the entries of res, read as stored (payload
// references in place), as ClassifyRaw classifies them with their payloads put
// back, provided each payload is the contents of a JSON string
// (transcript.ResolvedEntry.Plain, known once it is fetched). ok is false when
// a reference could make the kind of its entry differ (see WriteRestoredStored),
// or sits within the value of a top-level field that also names: the caller
// then needs the entries with their payloads.
func ClassifyStored(res *transcript.LeanResult, also ...string) (kinds []RawKind, ok bool) {
	kinds = make([]RawKind, res.Len())
	ok = true
	for i := range kinds {
		raw := res.Raw(i)
		kinds[i], _ = ClassifyRaw(raw)
		if refs := res.Refs(i); len(refs) > 0 {
			ok = ok && storedKindHolds(raw, kinds[i], refs, also)
		}
	}
	return kinds, ok
}

// ErrNotPlain stops a write of entries classified as stored (ClassifyStored)
// at an entry whose payloads are not the contents of a JSON string
// (transcript.ResolvedEntry.Plain): the writer classifies them resolved instead.
var ErrNotPlain = errors.New("a payload is not the contents of a JSON string")

// classifiedFields are the top-level fields whose values ClassifyRaw reads
// (pi.ParseEntry and pi.ParseHeader).
var classifiedFields = []string{"type", "id", "parentId", "version"}

// storedKindHolds reports whether raw, an entry as stored holding the references
// refs, of kind kind, is of that kind too with its payloads put back, provided
// each payload is the contents of a JSON string: raw is valid JSON (then every
// reference is within a string, and the payloads change no token but those
// strings), and each reference is within the value of a top-level field that
// ClassifyRaw does not read nor also names (not in a key, which could become one
// it reads).
func storedKindHolds(raw []byte, kind RawKind, refs []segment.PayloadRef, also []string) bool {
	if kind == RawInvalid && !json.Valid(raw) {
		return false
	}
	within := make([]bool, len(refs))
	err := jsonscan.EachRawField(raw, func(key, v []byte, off int) {
		if slices.Contains(classifiedFields, string(key)) || slices.Contains(also, string(key)) {
			return
		}
		for k, r := range refs {
			if off <= int(r.Off) && int(r.Off)+segment.RefLen <= off+len(v) {
				within[k] = true
			}
		}
	})
	// Valid JSON that is not an object is no entry either way.
	return err != nil || !slices.Contains(within, false)
}

// writeRestoredKinds writes the files of res whose entries are of kinds, their
// bytes given by each (in the order of its idx); see WriteRestoredStored.
func writeRestoredKinds(cfg Config, who Identity, agentID, sessionID string, res *transcript.LeanResult, kinds []RawKind,
	each func(idx []int, fn func(i int, e transcript.ResolvedEntry) error) error) (RestoredSession, error) {
	header, n := -1, 0
	for i, k := range kinds {
		switch k {
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
	// The header, then the entries in merge order.
	idx := make([]int, 0, n+1)
	idx = append(idx, header)
	for i, k := range kinds {
		if k == RawEntry || k == RawLeaf {
			idx = append(idx, i)
		}
	}
	// sums[k] is the xxhash64 of the bytes of entry idx[k+1], computed as it is
	// written, for the origins file.
	sums := make([]uint64, 0, n)
	writeLog := func(w io.Writer) (int64, error) {
		bw := bufio.NewWriterSize(w, restoreChunk)
		d := xxhash.New()
		var size int64
		first := true
		err := each(idx, func(_ int, e transcript.ResolvedEntry) error {
			if !e.Plain {
				return ErrNotPlain
			}
			d.Reset()
			for _, p := range e.Pieces {
				bw.Write(p)
				d.Write(p)
				size += int64(len(p))
			}
			if err := bw.WriteByte('\n'); err != nil { // the first write error, kept by the writer
				return err
			}
			size++
			if !first { // the header (written first) has no origin
				sums = append(sums, d.Sum64())
			}
			first = false
			return nil
		})
		if err != nil {
			return 0, err
		}
		return size, bw.Flush()
	}
	// The origin records, one per entry written, grouped by origin key in key
	// order (as originLogOf groups them) and streamed to the origins file: at
	// holds the position in idx[1:] of each, put in that order (stable: merge
	// order within a key).
	origins := func(yield func(originRecord) bool) {
		at := make([]int32, n)
		for k := range at {
			at[k] = int32(k)
		}
		key := func(k int32) string { return res.Origin(idx[k+1]).Key }
		slices.SortStableFunc(at, func(a, b int32) int { return strings.Compare(key(a), key(b)) })
		for _, k := range at {
			i := idx[k+1]
			if !yield(originRecord{id: res.ID(i), origin: res.Origin(i), sum: sums[k]}) {
				return
			}
		}
	}
	// The context file is Pi's file: it leaves out the entries on a parent
	// cycle, as a Tree's Flush does (cycles.go); the log keeps them.
	var skip func(line int) bool
	if on := OnParentCycleLean(res, func(i int) bool { return kinds[i] == RawEntry || kinds[i] == RawLeaf }); on != nil {
		skip = func(line int) bool { return line > 0 && on[idx[line]] }
	}
	files, size, err := writeRestored(cfg, who, agentID, sessionID, writeLog, skip, segmentsFile{have: res.Held()}, origins)
	return RestoredSession{Files: files, Entries: n, Size: size}, err
}

// OnParentCycleLean is pi.OnParentCycle of the entries of res that written
// reports as lines of a session file (a header is not one): it marks, by merge
// index, those on a parent cycle as Pi follows parentId (an entry naming
// itself too), nil for none.
func OnParentCycleLean(res *transcript.LeanResult, written func(i int) bool) []bool {
	return pi.OnParentCycle(res.Len(), func(i int) (int, bool) {
		if !written(i) {
			return 0, false
		}
		if p, ok := res.Parent(i); ok {
			return p, written(p)
		}
		// The merge links no entry to itself: a self-parent is read here.
		return i, res.Entry(i).ParentID == res.ID(i)
	})
}

// writeRestored writes the log with writeLog and the context file as its copy
// (writeLogAndCopy) without the lines skip reports (nil: none), then the
// origins file with origins (already grouped by key, streamed: see
// writeOriginsGrouped), and then seg, the segments file (its sizes and origins
// filled in); it returns the size of the log.
func writeRestored(cfg Config, who Identity, agentID, sessionID string, writeLog func(w io.Writer) (int64, error), skip func(line int) bool, seg segmentsFile, origins iter.Seq[originRecord]) (Files, int64, error) {
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
	size, ctxSize, err := writeLogAndCopy(files.Log, files.Context, writeLog, skip, cfg.NoSync)
	if err != nil {
		return files, 0, fmt.Errorf("restore %s: %w", t.ref, err)
	}
	// The sizes are those just written: no need to stat the files again.
	seg.sizes = sizesLine(size, ctxSize)
	if seg.originsSize, seg.originsSum, err = writeOriginsGrouped(files.Origins, origins, cfg.NoSync); err != nil {
		return files, 0, fmt.Errorf("save origins of %s: %w", t.ref, err)
	}
	if err := writeSegmentsFile(files.Segments, seg); err != nil {
		return files, 0, fmt.Errorf("save segments of %s: %w", t.ref, err)
	}
	return files, size, nil
}

// writeLogAndCopy writes the file log with write and the context file ctxFile as a copy
// of it, each under a temporary name (restoreTemp) renamed into place once
// written and fsynced (unless noSync): the log first, as a Flush writes them.
// The copy is the kernel's (os.File.ReadFrom: copy_file_range on Linux), so the
// bytes are produced once. On an error neither file is put in place; a crash
// leaves at most a log and a temporary file, which the next restore writes
// over. It returns the size of each file. The lines skip reports (counted from
// 0, the header) are left out of the copy, which is then made line by line.
func writeLogAndCopy(log, ctxFile string, write func(w io.Writer) (int64, error), skip func(line int) bool, noSync bool) (size, ctxSize int64, err error) {
	tmpLog, tmpCtx := restoreTemp(log), restoreTemp(ctxFile)
	defer func() {
		if err != nil {
			_ = os.Remove(tmpLog)
			_ = os.Remove(tmpCtx)
		}
	}()
	lf, err := os.OpenFile(tmpLog, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, 0, fmt.Errorf("create %s: %w", tmpLog, err)
	}
	defer lf.Close()
	if size, err = write(lf); err != nil {
		return 0, 0, fmt.Errorf("write %s: %w", log, err)
	}
	if err := syncUnless(lf, noSync); err != nil {
		return 0, 0, err
	}
	if err := os.Rename(tmpLog, log); err != nil {
		return 0, 0, fmt.Errorf("rename %s: %w", tmpLog, err)
	}
	if _, err := lf.Seek(0, io.SeekStart); err != nil {
		return 0, 0, fmt.Errorf("read back %s: %w", log, err)
	}
	ctxSize = size
	err = writeFile(tmpCtx, noSync, func(f *os.File) error {
		if skip != nil {
			ctxSize, err = copyLines(f, lf, skip)
			return err
		}
		n, err := f.ReadFrom(lf)
		if err == nil && n != size {
			err = fmt.Errorf("copied %d bytes of %d", n, size)
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("copy %s: %w", log, err)
	}
	if err := os.Rename(tmpCtx, ctxFile); err != nil {
		return 0, 0, fmt.Errorf("rename %s: %w", tmpCtx, err)
	}
	if noSync {
		return size, ctxSize, nil
	}
	return size, ctxSize, fsutil.SyncDir(filepath.Dir(ctxFile))
}

// copyLines copies the lines of r to w but those skip reports (by number, from
// 0), and returns the bytes written.
func copyLines(w io.Writer, r io.Reader, skip func(line int) bool) (int64, error) {
	br := bufio.NewReaderSize(r, restoreChunk)
	bw := bufio.NewWriterSize(w, restoreChunk)
	var n int64
	for line := 0; ; line++ {
		l, err := br.ReadBytes('\n')
		if len(l) > 0 && !skip(line) {
			bw.Write(l)
			n += int64(len(l))
		}
		if err == io.EOF {
			return n, bw.Flush()
		}
		if err != nil {
			return 0, err
		}
	}
}

// restoreTemp is the name a restore writes the file at path under before it
// renames it into place: hidden, and not a session's file name.
func restoreTemp(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".restore")
}

// syncUnless fsyncs f unless noSync.
func syncUnless(f *os.File, noSync bool) error {
	if noSync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	return nil
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

// restoreChunk is the size of the buffer a restore writes its log through.
const restoreChunk = 1 << 20

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
	return syncUnless(f, noSync)
}
