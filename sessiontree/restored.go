package sessiontree

import (
	"bufio"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/transcriptstore/transcript/transcript"
)

// RestoredFiles are the paths of the local files WriteRestored wrote.
type RestoredFiles struct {
	Log, Context, Segments string
}

// WriteRestored writes the local files of a session restored from the store
// without building a Tree, so that a session of any size is restored at the
// memory of its bytes: the log and the context file each hold header, then
// every entry of entries in order, each followed by "\n" (fsynced unless
// Config.NoSync), and the segments file names have, the segments whose entries
// they hold. That is what Restore followed by Flush writes for a session whose
// merged entries (from the store) are header and entries: the caller passes the
// first session header and the entries that ParseEntry accepts. Like Restore, it
// refuses to run when the context file exists.
func WriteRestored(cfg Config, rc RuntimeContext, agentID, sessionID string, header []byte, entries iter.Seq[[]byte], have transcript.SegmentSet) (RestoredFiles, error) {
	t, err := newTree(cfg, rc, agentID, sessionID)
	if err != nil {
		return RestoredFiles{}, err
	}
	files := RestoredFiles{Log: t.logPath, Context: t.ctxPath, Segments: t.segmentsPath()}
	if _, err := os.Stat(t.ctxPath); err == nil {
		return files, fmt.Errorf("restore %s: local file %s exists", t.ref, t.ctxPath)
	}
	if err := os.MkdirAll(filepath.Dir(t.logPath), 0o755); err != nil {
		return files, fmt.Errorf("restore %s: create session directory: %w", t.ref, err)
	}
	// A segments file left behind describes files that are gone.
	if err := os.Remove(files.Segments); err != nil && !os.IsNotExist(err) {
		return files, fmt.Errorf("restore %s: remove stale segments file: %w", t.ref, err)
	}
	for _, path := range []string{t.logPath, t.ctxPath} {
		if err := writeEntries(path, header, entries, cfg.NoSync); err != nil {
			return files, fmt.Errorf("restore %s: %w", t.ref, err)
		}
	}
	if err := writeSegmentsFile(files.Segments, segmentsFile{have: have, sizes: t.localSizes()}); err != nil {
		return files, fmt.Errorf("save segments of %s: %w", t.ref, err)
	}
	return files, nil
}

// writeEntries creates path with header and entries, each followed by "\n",
// through one buffer, and fsyncs it unless noSync.
func writeEntries(path string, header []byte, entries iter.Seq[[]byte], noSync bool) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", path, cerr)
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	w.Write(header)
	w.WriteByte('\n')
	for raw := range entries {
		w.Write(raw)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	return nil
}
