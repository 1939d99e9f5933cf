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

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Put creates key from r, create-only (see the package doc for how a retry is told
// from a conflict).
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := b.write(ctx, key, r, size, opts, false); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Replace writes key from r whether or not it exists (last writer wins), atomically
// with a rename.
func (b *Bucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := b.write(ctx, key, r, size, opts, true); err != nil {
		return fmt.Errorf("replace %s: %w", key, err)
	}
	return nil
}

func (b *Bucket) write(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions, replace bool) (err error) {
	if err := check(ctx, key); err != nil {
		return err
	}
	final := b.path(key)
	dir := filepath.Dir(final)
	tmp, err := b.createTemp(ctx, dir)
	if err != nil {
		return err
	}
	published := false
	defer func() {
		if !published {
			tmp.Close()
			os.Remove(tmp.Name())
			b.prune(dir)
		}
	}()

	if err := copyN(ctx, tmp, r, size); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	if replace {
		if fi, err := os.Lstat(final); err == nil && fi.IsDir() {
			return fmt.Errorf("%w: %s is a directory of other keys", bucket.ErrInvalidKey, key)
		}
		if err := os.Rename(tmp.Name(), final); err != nil {
			return err
		}
		published = true
		return b.syncPublished(dir)
	}

	if err := os.Link(tmp.Name(), final); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		same, err := sameContent(tmp.Name(), final)
		if err != nil {
			return err
		}
		if same && opts.Checksum != "" {
			return nil // a retry of the same write
		}
		return bucket.ErrExists
	}
	published = true
	if err := os.Remove(tmp.Name()); err != nil {
		return err
	}
	return b.syncPublished(dir)
}

// syncPublished fsyncs dir once a write put its object there. A concurrent
// Delete of the object (a compaction in another process taking it as an input,
// say) may have removed it and pruned dir meanwhile: the write happened and was
// undone, as a PUT followed by a DELETE on S3, and a directory gone leaves
// nothing to make durable, so it is not an error (Delete treats it alike).
func (b *Bucket) syncPublished(dir string) error {
	if b.published != nil {
		b.published()
	}
	return syncDirIfPresent(dir)
}

// maxCreateAttempts bounds how often createTemp starts over after a concurrent
// Delete pruned a directory it was creating. Each new attempt needs another prune
// to land in a window of a few system calls, so the bound is never reached in
// practice; it only turns a file system that keeps losing directories into an error.
const maxCreateAttempts = 1000

// createTemp creates the directory and a temp file in it, then fsyncs the parents
// of any directory it created so that the new entries survive a crash. Delete prunes
// the directories it leaves empty, so until the temp file is in place any directory
// on the path may vanish: between two levels of MkdirAll, or before CreateTemp.
// When a step meets a missing directory, the whole create starts again. Once the
// temp file exists its directories are not empty and no prune can remove them, so
// the fsyncs that follow cannot meet a vanished directory.
func (b *Bucket) createTemp(ctx context.Context, dir string) (*os.File, error) {
	created := false
	for attempt := 1; ; attempt++ {
		made, err := b.mkdirs(dir)
		created = created || made
		var f *os.File
		if err == nil {
			f, err = os.CreateTemp(dir, TempPrefix+"*")
		}
		if err == nil {
			if created {
				if err := b.syncParents(dir); err != nil {
					f.Close()
					os.Remove(f.Name())
					return nil, err
				}
			}
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt == maxCreateAttempts {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// mkdirs creates dir and its parents and reports whether it had to create any.
// It does not create the root: a root removed under the bucket is a bucket
// deleted (bucket.ErrNoBucket), which a write does not bring back, as on S3.
func (b *Bucket) mkdirs(dir string) (bool, error) {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return false, nil
	}
	if _, err := os.Stat(b.root); errors.Is(err, fs.ErrNotExist) {
		return false, bucket.ErrNoBucket
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return true, b.mkdirError(dir, err)
	}
	return true, nil
}

// mkdirError tells what an error of os.MkdirAll(dir) means for a write. Only
// an object where the path wants a directory makes the key invalid. MkdirAll
// also answers EEXIST when another write created a directory of the path at the
// same moment and a Delete pruned it before MkdirAll looked at it again (it
// checks that what exists is a directory); that is a directory that vanished
// mid-create, which createTemp starts over after (an fs.ErrNotExist), not an
// invalid key: the mirror quarantines a segment whose PUT says invalid key.
func (b *Bucket) mkdirError(dir string, err error) error {
	if !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, fs.ErrExist) {
		return err
	}
	rel, _ := filepath.Rel(b.root, dir)
	p := b.root
	for _, elem := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, elem)
		fi, lerr := os.Lstat(p)
		if lerr != nil {
			break // missing: pruned meanwhile, so nothing below it is an object
		}
		if !fi.IsDir() {
			obj, _ := filepath.Rel(b.root, p)
			return fmt.Errorf("%w: %s is an object, not a directory of keys",
				bucket.ErrInvalidKey, filepath.ToSlash(obj))
		}
	}
	return fmt.Errorf("create %s: a directory was removed while it was created: %w", filepath.ToSlash(rel), fs.ErrNotExist)
}

// syncParents fsyncs each parent of dir up to the root.
func (b *Bucket) syncParents(dir string) error {
	for d := dir; d != b.root; {
		p := filepath.Dir(d)
		if err := fsutil.SyncDir(p); err != nil {
			return err
		}
		if p == d {
			break
		}
		d = p
	}
	return nil
}

// copyN copies size bytes (all, if size < 0) from r to w, checking ctx between
// chunks. A source shorter than size is an error.
func copyN(ctx context.Context, w io.Writer, r io.Reader, size int64) error {
	if size >= 0 {
		r = io.LimitReader(r, size)
	}
	buf := make([]byte, 256<<10)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, rerr := r.Read(buf)
		if m > 0 {
			if _, err := w.Write(buf[:m]); err != nil {
				return err
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read source: %w", rerr)
		}
	}
	if size >= 0 && n != size {
		return fmt.Errorf("read source: %d of %d bytes: %w", n, size, io.ErrUnexpectedEOF)
	}
	return nil
}

// sameContent reports whether the files a and b hold the same bytes. A directory at
// b is an invalid key for the write, not a conflict.
func sameContent(a, b string) (bool, error) {
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	if sb.IsDir() {
		return false, fmt.Errorf("%w: the key is a directory of other keys", bucket.ErrInvalidKey)
	}
	return fsutil.SameContent(a, b)
}
