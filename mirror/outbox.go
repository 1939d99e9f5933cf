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

// The outbox is a local directory laid out like the bucket, so that the full object
// key of every segment is its path:
//
//	{OutboxDir}/LOCK            held (flock) by the one Mirror using the outbox
//	{OutboxDir}/tmp/            files being written; removed when a Mirror starts
//	{OutboxDir}/pending/{key}   segments not yet confirmed by the store
//	{OutboxDir}/failed/{key}    quarantine: segments the store rejected for good
//
// A file is written at its place under pending/ and fsynced, then its directory; it
// is complete once Upload returns, and one that a crash cut short (Upload had not
// returned) fails decode and is removed when a Mirror starts. It is removed only
// after the store confirmed the upload. tmp/ holds nothing now but what an older
// version left there. Files under failed/ are never scanned, retried or
// deleted by the Mirror: an operator inspects them (they are plain segments, readable
// with `zstd -dc`) and moves them back under pending/ to retry.
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
	// dirs fsyncs the pending directories with group commit, so that concurrent
	// writes into one directory share an fsync.
	dirs *dirSyncer
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
	return &outbox{dir: dir, lock: f, dirs: newDirSyncer()}, nil
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

// write stores data as the pending segment key, durably: when write returns nil the
// file survives a crash of the process or the machine.
//
// The file is created at its final path, written and fsynced, and only then are
// the directories whose entries changed fsynced (its own, with group commit, and
// the parents of directories it had to create). On a journaling file system the
// file's fsync commits the directory changes made before it, so those directory
// fsyncs find nothing left to write; writing in tmp/ and renaming would need a
// second journal commit per segment. A crash during write can leave a torn file
// under pending/: write had not returned, so nobody was told it was stored, and
// scan removes a file that fails verification.
func (o *outbox) write(key string, data []byte) error {
	if err := bucket.ValidateKey(key); err != nil {
		return fmt.Errorf("outbox write: %w", err)
	}
	dst := o.pendingPath(key)
	dir := filepath.Dir(dst)
	changed, err := mkdirAll(dir)
	if err != nil {
		return fmt.Errorf("outbox write: %w", err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("outbox write: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	for _, d := range changed {
		if err == nil {
			err = fsutil.SyncDir(d)
		}
	}
	if err == nil {
		err = o.dirs.syncDir(dir)
	}
	if err != nil {
		_ = os.Remove(dst)
		return fmt.Errorf("outbox write %s: %w", key, err)
	}
	return nil
}

// dropTorn removes the pending files that fail decode (segments a crash cut short
// while write ran, see write) and returns the others, and the keys it removed. A
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
// same key are an idempotent PUT, and a segment compacted meanwhile is superseded),
// so the upload path pays one fsync less per segment.
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

// mkdirAll creates dir and its missing parents, and returns the directories whose
// entries it changed (the parent of each directory it created), parents first, for
// the caller to fsync.
func mkdirAll(dir string) ([]string, error) {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil, nil
	}
	var changed []string
	parent := filepath.Dir(dir)
	if parent != dir && !strings.HasSuffix(parent, string(filepath.Separator)) {
		c, err := mkdirAll(parent)
		if err != nil {
			return nil, err
		}
		changed = c
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return changed, nil // created concurrently
		}
		return nil, err
	}
	return append(changed, parent), nil
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
