package sessiontree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/transcript"
)

// Files are the paths of one session's local files (see FilesOf).
type Files struct {
	// Context is the context file: what the model still needs, rewritten
	// atomically after a compaction entry is flushed.
	Context string
	// Log is the log file: append-only, every entry the tree ever persisted.
	Log string
	// Segments is the segments file: the store's segments whose entries the two
	// files hold, so that a pull after a restart fetches only what is new. A tree
	// that syncs from the store keeps it; it is written without fsync (a lost or
	// torn one costs a fuller read, never an entry).
	Segments string
	// Origins is the origins file: where in the store each entry the local files
	// hold from those segments was first stored. Records are appended to it; the
	// segments file names the length of it that counts and that length's
	// checksum, so a torn, lost or longer file costs a fuller read, never a wrong
	// order.
	Origins string
	// Unsent is the unsent file: which entries the local files hold that the
	// uploader has not accepted (a hand-over it refused), written atomically
	// and fsynced before the local files get them, removed once they are
	// handed over. Load makes them pending again. It exists only while
	// something waits; the package doc gives its format.
	Unsent string
}

// FilesOf returns the paths of ref's local files under root. It is the one place
// that spells the local layout (ref's empty namespace is the default one):
//
//	{root}/{namespace}/agents/{agentId}/sessions/{sessionId}.jsonl      context file
//	{root}/{namespace}/agents/{agentId}/sessions/{sessionId}.log.jsonl  log file
//	{root}/{namespace}/agents/{agentId}/sessions/{sessionId}.segments   segments file
//	{root}/{namespace}/agents/{agentId}/sessions/{sessionId}.origins    origins file
//	{root}/{namespace}/agents/{agentId}/sessions/{sessionId}.unsent     unsent file
//
// With root "" the paths are relative to the root (the legacy mirror's keys are
// these, with "/" for separator). FilesOf does not validate ref: a Tree validates
// its ref before it derives its files.
func FilesOf(root string, ref transcript.TranscriptRef) Files {
	ref = ref.Norm()
	base := filepath.Join(root, ref.Namespace, "agents", ref.AgentID, "sessions", ref.SessionID)
	return Files{Context: base + ".jsonl", Log: base + ".log.jsonl", Segments: base + ".segments", Origins: base + ".origins", Unsent: base + ".unsent"}
}

// TornSuffix, appended to the path of a context or log file, names the file that
// keeps the torn tails cut from it: before a flush truncates an unterminated last
// line that does not parse (a write cut short by a crash), it appends those bytes
// and a "\n" to {file}.torn and fsyncs it, so that repair never destroys data
// silently.
const TornSuffix = ".torn"

// writeAppend appends data to path, creating it (and its directory) if needed,
// and fsyncs. If the file does not end in "\n" (a torn or unterminated last
// line), the tail is repaired first: an unterminated line that parses gets its
// newline, anything else after the last "\n" is saved to path+TornSuffix and
// truncated away, so two entries never fuse and no byte is dropped unseen. On a
// write error the file is truncated back to its previous size.
func writeAppend(path string, data []byte, noSync bool) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create session directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	size, err := repairTail(f, noSync)
	if err != nil {
		return fmt.Errorf("repair %s: %w", path, err)
	}
	if _, err := f.WriteAt(data, size); err != nil {
		_ = f.Truncate(size)
		return fmt.Errorf("append %s: %w", path, err)
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	return nil
}

// repairTail makes f end with "\n" (or be empty) and returns its size. A torn
// tail it cuts off is first saved with saveTorn.
func repairTail(f *os.File, noSync bool) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size == 0 {
		return 0, nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], size-1); err != nil {
		return 0, err
	}
	if last[0] == '\n' {
		return size, nil
	}
	// Find the start of the unterminated line.
	start := size
	buf := make([]byte, 64<<10)
	for start > 0 {
		n := int64(len(buf))
		if n > start {
			n = start
		}
		if _, err := f.ReadAt(buf[:n], start-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			start = start - n + int64(i) + 1
			break
		}
		start -= n
	}
	tail := make([]byte, size-start)
	if _, err := f.ReadAt(tail, start); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if len(tail) <= MaxLineBytes && validObject(tail) {
		if _, err := f.WriteAt([]byte{'\n'}, size); err != nil {
			return 0, err
		}
		return size + 1, nil
	}
	if err := saveTorn(f.Name()+TornSuffix, tail, noSync); err != nil {
		return 0, err
	}
	if err := f.Truncate(start); err != nil {
		return 0, err
	}
	return start, nil
}

// saveTorn appends tail and "\n" to path (creating it) and makes it durable:
// the torn bytes are kept for inspection before the session file loses them.
func saveTorn(path string, tail []byte, noSync bool) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("save torn tail: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("save torn tail: %w", cerr)
		}
	}()
	if _, err := f.Write(append(tail[:len(tail):len(tail)], '\n')); err != nil {
		return fmt.Errorf("save torn tail: %w", err)
	}
	if noSync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("save torn tail: %w", err)
	}
	if err := fsutil.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("save torn tail: %w", err)
	}
	return nil
}

// writeAtomic replaces path with data: temp file, fsync, rename, fsync directory.
// A torn tail of the file it replaces is saved first (repairTail), as an append
// would save it: replacing the file must not drop those bytes unseen either.
func writeAtomic(path string, data []byte, noSync bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create session directory: %w", err)
	}
	if err := saveTornBefore(path, noSync); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, noSync, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// saveTornBefore saves the torn tail of path, if it exists and has one, before
// the file is replaced.
func saveTornBefore(path string, noSync bool) (err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	if _, err := repairTail(f, noSync); err != nil {
		return fmt.Errorf("repair %s: %w", path, err)
	}
	return nil
}

// setAside saves the bytes of path (if any) to path+TornSuffix and removes it.
func setAside(path string, noSync bool) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if err := saveTorn(path+TornSuffix, data, noSync); err != nil {
			return err
		}
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	if noSync {
		return nil
	}
	return fsutil.SyncDir(filepath.Dir(path))
}

// lastEntry returns the entry on the last complete line of the file at path,
// reading only the end of the file; false when the file cannot be read, holds
// no complete line, or its last one is no entry (a header, say).
func lastEntry(path string) (Entry, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Entry{}, false
	}
	// end is just past the last "\n" (an unterminated tail is no complete
	// line), start just past the one before it.
	end, ok := lastNewline(f, st.Size(), MaxLineBytes+1)
	if !ok {
		return Entry{}, false
	}
	end++
	start, ok := lastNewline(f, end-1, MaxLineBytes+1)
	if ok {
		start++
	} else if end-1 > MaxLineBytes {
		return Entry{}, false
	}
	line := make([]byte, end-1-start)
	if _, err := f.ReadAt(line, start); err != nil {
		return Entry{}, false
	}
	e, err := ParseEntry(line)
	return e, err == nil
}

// lastNewline returns the offset of the last "\n" of f before offset before,
// looking back at most limit bytes; false when there is none.
func lastNewline(f *os.File, before, limit int64) (int64, bool) {
	buf := make([]byte, 64<<10)
	for pos := before; pos > 0 && before-pos < limit; {
		n := min(int64(len(buf)), pos)
		if _, err := f.ReadAt(buf[:n], pos-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos - n + int64(i), true
		}
		pos -= n
	}
	return 0, false
}
