package filebucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Conditional writes
//
// A file system has no compare-and-swap on a file's content, so PutIf makes one:
// it takes an exclusive flock(2) on the bucket's root directory, reads the current
// file and compares its ETag, writes the new bytes to a temp file and renames it
// over the key (IfMatch) or links it to the key (IfNoneMatch, create-only as Put),
// and only then releases the lock. The lock is an advisory lock of the kernel, held
// per open file description, so it excludes other goroutines of this process and
// other processes sharing the directory alike, and it is released when a process
// dies (no stale lock file to clean up). Readers take no lock: rename is atomic,
// so GetWithETag sees the old or the new file. One lock per bucket serialises all
// conditional writes of a directory; they are small and rare (a session head per
// strict append), so that is cheap. Delete takes it too, so that a PutIf that
// checked its condition before a Delete cannot write the object back after it
// (a session's head would outlive the session's deletion); Put does not: a
// create-only Put cannot overwrite.
// The ETag is the hex MD5 of the file's bytes, as S3 gives a single-PUT object.
// Local file systems support flock; some network file systems do not. Where the
// platform has no flock (not unix), PutIf fails with an error wrapping
// errors.ErrUnsupported: strict mode needs a unix file system there.

// GetWithETag reads key's file and returns its bytes and their ETag.
func (b *Bucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	rc, _, err := b.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, "", fmt.Errorf("get %s: %w", key, err)
	}
	return data, etagOf(data), nil
}

// PutIf writes key if cond holds (see "Conditional writes" above).
func (b *Bucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	if err := check(ctx, key); err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	if err := cond.Validate(); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := copyN(ctx, &buf, r, size); err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	data := buf.Bytes()
	unlock, err := b.lock(ctx)
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	defer unlock()

	cur, err := os.ReadFile(b.path(key))
	switch {
	case isNotFound(err):
		if cond.IfMatch != "" {
			return "", fmt.Errorf("put %s: object missing: %w", key, bucket.ErrPreconditionFailed)
		}
	case errors.Is(err, syscall.EISDIR):
		return "", fmt.Errorf("put %s: %w: the key is a directory of other keys", key, bucket.ErrInvalidKey)
	case err != nil:
		return "", fmt.Errorf("put %s: %w", key, err)
	case cond.IfNoneMatch:
		return "", fmt.Errorf("put %s: object exists: %w", key, bucket.ErrPreconditionFailed)
	case etagOf(cur) != cond.IfMatch:
		return "", fmt.Errorf("put %s: etag is not %s: %w", key, cond.IfMatch, bucket.ErrPreconditionFailed)
	}
	if b.condWritten != nil {
		b.condWritten()
	}
	// Under the lock the condition holds; write as Put (link, create-only) or as
	// Replace (rename). A plain Put that created the key meanwhile wins.
	err = b.write(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}, cond.IfMatch != "")
	if errors.Is(err, bucket.ErrExists) {
		return "", fmt.Errorf("put %s: object exists: %w", key, bucket.ErrPreconditionFailed)
	}
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	return etagOf(data), nil
}

// etagOf is the ETag of an object's bytes.
func etagOf(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}
