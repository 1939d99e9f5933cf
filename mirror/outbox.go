package mirror

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// The outbox is a local directory:
//
//	{OutboxDir}/LOCK                held (flock) by the one Mirror using the outbox
//	{OutboxDir}/journal/{seq}.wal   segments accepted by Upload, appended as records
//	{OutboxDir}/journal/{seq}.done  marks of the records of {seq}.wal that are done
//	{OutboxDir}/pending/{key}       segments as single files, laid out like the bucket
//	{OutboxDir}/failed/{key}        quarantine: segments the store rejected for good
//	{OutboxDir}/tmp/                what an older version left; removed when a Mirror starts
//
// Upload appends each segment to the journal (see journal.go) and returns once an
// fsync that concurrent Uploads share has made it durable. pending/ holds
// segments as one file each, as older versions wrote them and as an operator moves
// them back from failed/ to retry: a Mirror uploads them at start, before the
// journal's records, and removes each once the store confirmed it; one that fails
// decode (an older version's write cut short by a crash) is removed. Files under
// failed/ are never scanned, retried or deleted by the Mirror: an operator inspects
// them (they are plain segments, readable with `zstd -dc`) and moves them back under
// pending/ to retry.
const (
	outboxLock    = "LOCK"
	outboxTmp     = "tmp"
	outboxPending = "pending"
	outboxFailed  = "failed"
)

// outbox is the on-disk part of a Mirror.
type outbox struct {
	dir  string
	lock *os.File
}

// pendingFile is one segment found in the outbox.
type pendingFile struct {
	key   string
	size  int64
	mtime time.Time
}

// openOutbox creates the outbox layout under dir and locks it.
func openOutbox(dir string) (*outbox, error) {
	for _, d := range []string{dir, filepath.Join(dir, outboxTmp), filepath.Join(dir, outboxPending), filepath.Join(dir, outboxFailed)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, outboxLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("outbox %s: %w", dir, err)
	}
	return &outbox{dir: dir, lock: f}, nil
}

// close releases the lock.
func (o *outbox) close() error {
	return o.lock.Close() // closing the descriptor drops the flock
}

func (o *outbox) pendingPath(key string) string {
	return filepath.Join(o.dir, outboxPending, filepath.FromSlash(key))
}

func (o *outbox) failedPath(key string) string {
	return filepath.Join(o.dir, outboxFailed, filepath.FromSlash(key))
}

// scan removes leftover temporary files and empty directories, and returns the
// pending segments and the number of quarantined ones. It must run before any write.
func (o *outbox) scan() ([]pendingFile, int, error) {
	tmp := filepath.Join(o.dir, outboxTmp)
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return nil, 0, fmt.Errorf("outbox scan: %w", err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(tmp, e.Name())); err != nil {
			return nil, 0, fmt.Errorf("outbox scan: %w", err)
		}
	}
	root := filepath.Join(o.dir, outboxPending)
	var files []pendingFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, pendingFile{key: filepath.ToSlash(rel), size: fi.Size(), mtime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("outbox scan: %w", err)
	}
	pruneEmptyDirs(root)
	failed := 0
	err = filepath.WalkDir(filepath.Join(o.dir, outboxFailed), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			failed++
		}
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("outbox scan: %w", err)
	}
	return files, failed, nil
}

// pruneEmptyDirs removes the empty directories below root (not root itself). It runs
// only while no upload writes, so it cannot race with a write into a directory.
func pruneEmptyDirs(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != root {
			dirs = append(dirs, path)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- { // children before parents
		_ = os.Remove(dirs[i]) // fails, harmlessly, when not empty
	}
}

// dropTorn removes the pending files that fail decode (segments a crash cut short
// while an older version wrote them) and returns the others, and the keys it removed. A
// file that cannot be read is kept: the upload reports the problem.
func (o *outbox) dropTorn(files []pendingFile, decode func([]byte) error) ([]pendingFile, []string, error) {
	kept := files[:0]
	var torn []string
	for _, f := range files {
		data, err := o.read(f.key)
		if err != nil || decode(data) == nil {
			kept = append(kept, f)
			continue
		}
		if err := os.Remove(o.pendingPath(f.key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("outbox: remove torn segment %s: %w", f.key, err)
		}
		torn = append(torn, f.key)
	}
	return kept, torn, nil
}

// read returns the bytes of the pending segment key.
func (o *outbox) read(key string) ([]byte, error) {
	return os.ReadFile(o.pendingPath(key))
}

// remove deletes the pending segment key once the store has it. A missing file is not
// an error. The removal is not fsynced: were it lost in a machine crash, the next
// start would upload the segment again, which is harmless (the same bytes under the
// same key are an idempotent PUT, and a segment compacted meanwhile is superseded).
func (o *outbox) remove(key string) error {
	if err := os.Remove(o.pendingPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("outbox remove %s: %w", key, err)
	}
	return nil
}

// quarantine moves the pending segment key under failed/.
func (o *outbox) quarantine(key string) error {
	src, dst := o.pendingPath(key), o.failedPath(key)
	if err := mkdirAllSync(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("outbox quarantine %s: %w", key, err)
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("outbox quarantine %s: %w", key, err)
	}
	if err := errors.Join(fsutil.SyncDir(filepath.Dir(dst)), fsutil.SyncDir(filepath.Dir(src))); err != nil {
		return fmt.Errorf("outbox quarantine %s: %w", key, err)
	}
	return nil
}

// quarantineData writes data, a segment held in memory (a journal record), as
// the quarantined segment key, durably: file, then directory.
func (o *outbox) quarantineData(key string, data []byte) error {
	if err := bucket.ValidateKey(key); err != nil {
		return fmt.Errorf("outbox quarantine: %w", err)
	}
	dst := o.failedPath(key)
	if err := mkdirAllSync(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("outbox quarantine %s: %w", key, err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("outbox quarantine %s: %w", key, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = fsutil.SyncDir(filepath.Dir(dst))
	}
	if err != nil {
		return fmt.Errorf("outbox quarantine %s: %w", key, err)
	}
	return nil
}

// mkdirAllSync creates dir and its missing parents, fsyncing the parent of every
// directory it creates so the new path survives a machine crash.
func mkdirAllSync(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir && !strings.HasSuffix(parent, string(filepath.Separator)) {
		if err := mkdirAllSync(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // created concurrently
		}
		return err
	}
	return fsutil.SyncDir(parent)
}

// unqueued returns the journal records to enqueue at start: those whose segment
// is neither among files (found under pending/) nor in the quarantine. Such a
// segment is a copy the Mirror made before a crash let it release the record (a
// quarantined one, or a file released from the quarantine since); the record is
// done, and unqueued hands it to release.
func (o *outbox) unqueued(recs []journalRecord, files []pendingFile, release func(journalRecord)) ([]journalRecord, error) {
	if len(recs) == 0 {
		return recs, nil
	}
	quarantined, err := o.quarantined()
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(files)+len(quarantined))
	for _, f := range files {
		seen[f.key] = true
	}
	for _, k := range quarantined {
		seen[k] = true
	}
	kept := recs[:0]
	for _, r := range recs {
		if !seen[r.key] {
			kept = append(kept, r)
			continue
		}
		release(r)
	}
	return kept, nil
}

// NoOutboxError reports a directory given as an outbox that does not exist or
// holds none of what a Mirror creates in one. It wraps bucket.ErrNotFound.
type NoOutboxError struct {
	Dir string
	// Why: "no such directory", or what the directory lacks.
	Why string
}

func (e *NoOutboxError) Error() string {
	return fmt.Sprintf("outbox %s: not found (%s)", e.Dir, e.Why)
}

// Unwrap returns bucket.ErrNotFound.
func (e *NoOutboxError) Unwrap() error { return bucket.ErrNotFound }

// checkOutbox returns a *NoOutboxError unless dir is a directory holding the lock
// file, the journal, pending/ or failed/ of a Mirror.
func checkOutbox(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &NoOutboxError{Dir: dir, Why: "no such directory"}
	case err != nil:
		return fmt.Errorf("outbox: %w", err)
	case !fi.IsDir():
		return &NoOutboxError{Dir: dir, Why: "not a directory"}
	}
	for _, name := range []string{outboxLock, outboxJournal, outboxPending, outboxFailed} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return nil
		}
	}
	return &NoOutboxError{Dir: dir, Why: fmt.Sprintf("the directory holds no %s, %s/, %s/ or %s/ of a mirror", outboxLock, outboxJournal, outboxPending, outboxFailed)}
}
