package membucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// GetWithETag returns a copy of key's bytes and its ETag.
func (b *Bucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	if err := check(ctx, key); err != nil {
		return nil, "", fmt.Errorf("get %s: %w", key, err)
	}
	b.mu.RLock()
	obj, ok := b.objects[key]
	b.mu.RUnlock()
	if !ok {
		return nil, "", fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
	}
	return bytes.Clone(obj.data), obj.info.ETag, nil
}

// PutIf stores the object if cond holds, deciding under the bucket's lock. The ETag
// of an object written by PutIf is the hex MD5 of its bytes, as S3 gives a single-PUT
// object.
func (b *Bucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	if err := check(ctx, key); err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	if err := cond.Validate(); err != nil {
		return "", err
	}
	data, err := readAll(r, size)
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	sum := md5.Sum(data)
	etag := hex.EncodeToString(sum[:])

	b.mu.Lock()
	defer b.mu.Unlock()
	old, exists := b.objects[key]
	switch {
	case cond.IfNoneMatch && exists:
		return "", fmt.Errorf("put %s: object exists: %w", key, bucket.ErrPreconditionFailed)
	case cond.IfMatch != "" && !exists:
		return "", fmt.Errorf("put %s: object missing: %w", key, bucket.ErrPreconditionFailed)
	case cond.IfMatch != "" && old.info.ETag != cond.IfMatch:
		return "", fmt.Errorf("put %s: etag is not %s: %w", key, cond.IfMatch, bucket.ErrPreconditionFailed)
	}
	b.set(key, data, etag, "")
	return etag, nil
}
