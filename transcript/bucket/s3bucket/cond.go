package s3bucket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/minio/minio-go/v7"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Conditional writes
//
// PutIf is one single PUT with "If-Match: <etag>" (minio-go SetMatchETag) or
// "If-None-Match: *" (SetMatchETagExcept("*")); the server decides the condition
// atomically. 412 Precondition Failed, and a missing key under If-Match, map to
// bucket.ErrPreconditionFailed. As for Put, the client retries 5xx responses, so a
// retry can meet its own first attempt, which changed the ETag: on 412 PutIf reads
// the object back and treats exactly its own bytes as success. Callers put
// something unique in the object (a version, the new segment's key), so another
// writer's object is never mistaken for ours.

// GetWithETag reads key whole with one GET and returns its bytes and the ETag of
// that response, so the ETag is the one of exactly these bytes.
func (b *Bucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	if err := check(ctx, key); err != nil {
		return nil, "", fmt.Errorf("get %s: %w", key, err)
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	body, oi, err := b.getObject(rctx, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("get %s: %w", key, classify(ctx, err))
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, "", fmt.Errorf("get %s: %w", key, classify(ctx, err))
	}
	return data, oi.ETag, nil
}

// GetIfChanged implements bucket.ChangeReader with one GET sent with
// "If-None-Match: <etag>": 304 Not Modified is an unchanged object. A server
// that ignores the header answers 200 with the object, whose ETag then tells.
func (b *Bucket) GetIfChanged(ctx context.Context, key, etag string) ([]byte, string, bool, error) {
	if err := check(ctx, key); err != nil {
		return nil, "", false, fmt.Errorf("get %s: %w", key, err)
	}
	if etag == "" {
		data, got, err := b.GetWithETag(ctx, key)
		return data, got, err == nil, err
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	var opts minio.GetObjectOptions
	if err := opts.SetMatchETagExcept(etag); err != nil {
		return nil, "", false, fmt.Errorf("get %s: %w", key, err)
	}
	body, oi, err := b.getObject(rctx, key, opts)
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusNotModified {
			return nil, etag, false, nil
		}
		return nil, "", false, fmt.Errorf("get %s: %w", key, classify(ctx, err))
	}
	defer body.Close()
	if oi.ETag == etag {
		return nil, etag, false, nil
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, "", false, fmt.Errorf("get %s: %w", key, classify(ctx, err))
	}
	return data, oi.ETag, true, nil
}

// PutIf writes key with a conditional single PUT (see "Conditional writes" above).
func (b *Bucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	if err := check(ctx, key); err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	if err := cond.Validate(); err != nil {
		return "", err
	}
	// Conditional objects are small: hold them in memory, so that a retry after
	// 412 can compare what was sent with what is stored.
	if size > b.cfg.MaxBufferedPut {
		return "", fmt.Errorf("put %s: conditional object of %d bytes is over %d", key, size, b.cfg.MaxBufferedPut)
	}
	src, err := b.body(r, size)
	sent := src.data
	if err == nil && sent == nil {
		sent = make([]byte, src.size)
		_, err = io.ReadFull(src.r, sent)
	}
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	po := minio.PutObjectOptions{DisableMultipart: true}
	if cond.IfNoneMatch {
		po.SetMatchETagExcept("*")
	} else {
		po.SetMatchETag(cond.IfMatch)
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	ui, err := b.putSigned(rctx, key, sent, po) // in memory already
	if err == nil {
		return ui.ETag, nil
	}
	err = classify(ctx, err)
	if errors.Is(err, bucket.ErrPreconditionFailed) || (cond.IfMatch != "" && errors.Is(err, bucket.ErrNotFound)) {
		if etag, ok := b.ownWrite(ctx, key, sent); ok {
			return etag, nil
		}
		return "", fmt.Errorf("put %s: %w (%w)", key, bucket.ErrPreconditionFailed, err)
	}
	return "", fmt.Errorf("put %s: %w", key, err)
}

// ownWrite reports whether key holds exactly the bytes of sent (a retried request
// whose first attempt succeeded) and returns their ETag.
func (b *Bucket) ownWrite(ctx context.Context, key string, sent []byte) (string, bool) {
	stored, etag, err := b.GetWithETag(ctx, key)
	if err != nil || !bytes.Equal(stored, sent) {
		return "", false
	}
	return etag, true
}
