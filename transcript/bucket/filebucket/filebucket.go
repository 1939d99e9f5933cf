// Package filebucket is the local-directory bucket.Bucket, the embedded default.
//
// # Layout
//
// Key "a/b/c" is the regular file DIR/a/b/c: the same layout an S3 tool (rclone, mc,
// s3cmd) produces when it copies a bucket into a directory, so such a copy opens as
// file://DIR, and DIR can be copied into a bucket as it is. Nothing else is stored:
// there are no sidecar or index files. Two consequences of using a file system:
// a key cannot be both an object and a "directory" of other keys ("a/b" and "a/b/c"),
// and a key whose element starts with ".tmp-" is reserved for temp files. Put
// rejects both with bucket.ErrInvalidKey. Entries that are not regular files
// (symlinks, devices) and names that are not valid keys are not listed.
//
// # Writes
//
// Put writes the bytes to a hidden temp file ".tmp-<random>" in the key's directory,
// fsyncs it, and publishes it with os.Link, which fails if the key exists; that is
// the file-system form of S3's create-only "If-None-Match: *". Then it removes the
// temp name and fsyncs the directory. Readers never see a partial object, and a
// failed or cancelled Put leaves nothing behind but, after a crash, possibly a temp
// file, which is never listed and which CleanTemp removes. The file system must
// support hard links (local file systems do; some network or FUSE mounts do not).
//
// # Checksums and retries
//
// The checksum given in bucket.PutOptions is not stored (it would need a sidecar
// file that S3 tools would copy as an object), so ObjectInfo.Checksum is always
// empty. Instead, when a Put meets an existing key, it compares the bytes: a Put
// with a non-empty Checksum and exactly the stored bytes is a retry and returns nil;
// anything else returns bucket.ErrExists. For the callers of the store, whose
// checksums identify the bytes, this is the same contract as the other backends.
//
// Deleting a key removes its file and then every directory above it that became
// empty, up to the root.
package filebucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

var (
	_ bucket.Bucket   = (*Bucket)(nil)
	_ bucket.Replacer = (*Bucket)(nil)
	_ bucket.Clock    = (*Bucket)(nil)
)

// TempPrefix starts the name of every temp file; such names are never listed. Ids
// never start with "." (transcript.ValidatePart), so no key of a valid session is
// hidden from a directory copy.
const TempPrefix = ".tmp-"

// Bucket stores objects as files under one root directory. It is safe for
// concurrent use, also by several processes sharing the directory.
type Bucket struct {
	root string
	// condWritten, when set (by tests), runs in PutIf once the condition has
	// been checked under the lock, before the write.
	condWritten func()
	// published, when set (by tests), runs in a write once the object is in
	// place, before its directory is fsynced.
	published func()
}

// New opens the bucket rooted at dir, creating the directory if needed. It does not
// scan the tree; call CleanTemp at startup to remove what a crash left behind.
func New(dir string) (*Bucket, error) {
	if dir == "" {
		return nil, errors.New("open file bucket: empty directory")
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open file bucket %s: %w", dir, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("open file bucket: %w", err)
	}
	return &Bucket{root: root}, nil
}

// Dir returns the bucket's absolute root directory.
func (b *Bucket) Dir() string { return b.root }

// path returns the file name of a validated key.
func (b *Bucket) path(key string) string {
	return filepath.Join(b.root, filepath.FromSlash(key))
}

// Get opens key's file.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if err := check(ctx, key); err != nil {
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, err)
	}
	f, err := os.Open(b.path(key))
	if err != nil {
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, mapNotFound(err))
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = bucket.ErrNotFound
	}
	if err != nil {
		f.Close()
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, err)
	}
	return f, info(key, fi), nil
}

// Stat returns key's size and modification time (Checksum is empty).
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if err := check(ctx, key); err != nil {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, err)
	}
	fi, err := os.Stat(b.path(key))
	if err == nil && !fi.Mode().IsRegular() {
		err = bucket.ErrNotFound
	}
	if err != nil {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, mapNotFound(err))
	}
	return info(key, fi), nil
}

// Delete removes key's file and prunes the directories it leaves empty. It
// holds the lock of conditional writes (see cond.go) while it removes the file,
// so that a PutIf that checked its condition before cannot write the object back
// after it is deleted.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := check(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	unlock, err := b.lock(ctx)
	switch {
	case err == nil:
		defer unlock()
	case !errors.Is(err, errors.ErrUnsupported): // no flock: no PutIf either
		return fmt.Errorf("delete %s: %w", key, err)
	}
	name := b.path(key)
	fi, err := os.Lstat(name)
	if err != nil || fi.IsDir() {
		if err == nil || isNotFound(err) {
			return nil
		}
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if err := os.Remove(name); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	dir := filepath.Dir(name)
	if err := syncDirIfPresent(dir); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	b.prune(dir)
	return nil
}

// prune removes dir and its parents up to the root while they are empty. Removing a
// directory is atomic and fails when it has entries, so a concurrent Put that has
// created its temp file keeps its directory.
func (b *Bucket) prune(dir string) {
	for dir != b.root && strings.HasPrefix(dir, b.root+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// Now implements bucket.Clock: the local clock, which stamps the files' ModTime.
func (b *Bucket) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// check reports an ended context or a key this backend cannot store.
func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := bucket.ValidateKey(key); err != nil {
		return err
	}
	if strings.HasPrefix(key, TempPrefix) || strings.Contains(key, "/"+TempPrefix) {
		return fmt.Errorf("%w: %q: elements starting with %q are reserved for temp files",
			bucket.ErrInvalidKey, key, TempPrefix)
	}
	return nil
}

func info(key string, fi fs.FileInfo) bucket.ObjectInfo {
	return bucket.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}
}

// syncDirIfPresent fsyncs dir, and succeeds if dir is gone: a concurrent
// Delete pruned it, and what it held needs no fsync any more.
func syncDirIfPresent(dir string) error {
	if err := fsutil.SyncDir(dir); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// isNotFound reports a missing file or a missing directory on its path (a path
// element that is a file gives ENOTDIR).
func isNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// mapNotFound turns a missing file into bucket.ErrNotFound, keeping the path out of
// the message (the caller names the key).
func mapNotFound(err error) error {
	if isNotFound(err) {
		return bucket.ErrNotFound
	}
	return err
}
