package s3bucket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Put creates key with a single create-only PUT (see the package doc).
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := b.put(ctx, key, r, size, opts, true); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Replace writes key whether or not it exists (last writer wins). It is as atomic
// as Put: readers see the old or the new object.
func (b *Bucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := b.put(ctx, key, r, size, opts, false); err != nil {
		return fmt.Errorf("replace %s: %w", key, err)
	}
	return nil
}

func (b *Bucket) put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions, createOnly bool) error {
	if err := check(ctx, key); err != nil {
		return err
	}
	src, err := b.body(r, size)
	if err != nil {
		return err
	}
	po := minio.PutObjectOptions{
		ContentType:      opts.ContentType,
		DisableMultipart: true,
	}
	if opts.Checksum != "" {
		po.UserMetadata = map[string]string{bucket.MetaChecksum: opts.Checksum}
	}
	if createOnly {
		po.SetMatchETagExcept("*")
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	_, err = b.putObject(rctx, key, src, po)
	if err == nil {
		return nil
	}
	err = classify(ctx, err)
	if !errors.Is(err, bucket.ErrPreconditionFailed) {
		return err
	}
	// The key exists: a conflict, or our own earlier attempt that the client
	// retried after a lost response.
	existing, serr := b.Stat(ctx, key)
	if serr != nil {
		// Whether the stored object is ours is unknown: report the failure of the
		// check, which callers may retry, never a conflict, which they may not.
		return fmt.Errorf("key exists, checking its checksum failed: %w", serr)
	}
	if opts.Checksum != "" && existing.Checksum == opts.Checksum {
		return nil
	}
	return bucket.ErrExists
}

// putObject sends one PUT of src: held in memory and small (src.data, or
// inMemory), as putSigned; otherwise as minio-go does by default.
func (b *Bucket) putObject(ctx context.Context, key string, src source, po minio.PutObjectOptions) (minio.UploadInfo, error) {
	data := src.data
	if data == nil {
		var err error
		if data, err = inMemory(src.r, src.size); err != nil {
			return minio.UploadInfo{}, err
		}
	}
	if data == nil || len(data) > maxSignedPayload {
		return b.client.PutObject(ctx, b.cfg.Bucket, key, src.r, src.size, po)
	}
	return b.putSigned(ctx, key, data, po)
}

// putSigned PUTs data with its SHA-256 in the SigV4 signature, so the server
// checks every byte as it does for minio-go's default, and the payload stays as
// authenticated over plain HTTP. minio-go's default over HTTP is
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD: the body re-framed in signed chunks, a
// 64 KiB buffer per request and an HMAC per chunk on both sides, a CPU cost that a
// replica flushing thousands of small segments pays on every one of them.
func (b *Bucket) putSigned(ctx context.Context, key string, data []byte, po minio.PutObjectOptions) (minio.UploadInfo, error) {
	sum := sha256.Sum256(data)
	po.DisableContentSha256 = true // no chunk-signed stream: the hash is in the signature
	return minio.Core{Client: b.client}.PutObject(ctx, b.cfg.Bucket, key, bytes.NewReader(data), int64(len(data)), "", hex.EncodeToString(sum[:]), po)
}

// maxSignedPayload is the largest body Put sends with its SHA-256 computed up
// front (a segment a flush writes is a few KiB).
const maxSignedPayload = 1 << 20

// inMemory returns the size bytes of body from its current position when body
// is held in memory (an io.ReaderAt that seeks) and at most maxSignedPayload
// bytes long; nil for other bodies.
func inMemory(body io.Reader, size int64) ([]byte, error) {
	ra, okAt := body.(io.ReaderAt)
	sk, okSeek := body.(io.Seeker)
	if !okAt || !okSeek || size <= 0 || size > maxSignedPayload {
		return nil, nil
	}
	off, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("read source: %w", err)
	}
	data := make([]byte, size)
	if n, err := ra.ReadAt(data, off); n < len(data) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read source: %w", err)
	}
	return data, nil
}

// source is a request body of known size: r, and data when body read the bytes
// into memory itself (r then reads data).
type source struct {
	r    io.Reader
	data []byte
	size int64
}

// body returns a request body of known size. A source that can seek is passed on
// (minio-go replays it on retries); others are buffered when small enough, so that
// they can be replayed too and a short source fails before any request. Sources
// too large to buffer stream once and without retries.
func (b *Bucket) body(r io.Reader, size int64) (source, error) {
	limit := b.cfg.MaxBufferedPut
	if size < 0 {
		data, err := io.ReadAll(io.LimitReader(r, limit+1))
		if err != nil {
			return source{}, fmt.Errorf("read source: %w", err)
		}
		if int64(len(data)) > limit {
			return source{}, fmt.Errorf("source of unknown size is over %d bytes: pass its size", limit)
		}
		return source{r: bytes.NewReader(data), data: data, size: int64(len(data))}, nil
	}
	if _, ok := r.(io.ReaderAt); ok {
		if _, ok := r.(io.Seeker); ok {
			return source{r: r, size: size}, nil
		}
	}
	if size <= limit {
		data := make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return source{}, fmt.Errorf("read source: %w", err)
		}
		return source{r: bytes.NewReader(data), data: data, size: size}, nil
	}
	return source{r: &exactReader{r: r, left: size}, size: size}, nil
}

// exactReader fails with io.ErrUnexpectedEOF when its source ends before left
// bytes, so that a short source aborts the request instead of ending it cleanly.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
