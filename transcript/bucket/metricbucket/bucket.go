package metricbucket

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Bucket is a bucket.Bucket whose operations are measured (see the package doc).
// It is safe for concurrent use when its inner bucket is.
type Bucket struct {
	inner   bucket.Bucket
	m       *Metrics
	backend string
}

var _ bucket.Bucket = (*Bucket)(nil)

// Inner returns the wrapped bucket.
func (b *Bucket) Inner() bucket.Bucket { return b.inner }

// Get implements bucket.Reader. The call ends when the body is closed.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	c := b.begin(OpGet)
	rc, oi, err := b.inner.Get(ctx, key)
	if err != nil {
		return nil, oi, c.end(err, 0)
	}
	return &body{rc: rc, call: c}, oi, nil
}

// body counts the bytes of a Get's body and ends its call at Close.
type body struct {
	rc   io.ReadCloser
	call call
	n    int64
	err  error // the first read error other than io.EOF
	once sync.Once
}

func (r *body) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *body) Close() error {
	err := r.rc.Close()
	r.once.Do(func() { r.call.end(r.err, r.n) })
	return err
}

// GetRange implements bucket.RangeReader.
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	c := b.begin(OpGetRange)
	data, err := b.inner.GetRange(ctx, key, off, n)
	return data, c.end(err, int64(len(data)))
}

// GetWithETag implements bucket.Conditional.
func (b *Bucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	c := b.begin(OpGetWithETag)
	data, etag, err := b.inner.GetWithETag(ctx, key)
	return data, etag, c.end(err, int64(len(data)))
}

// GetIfChanged implements bucket.ChangeReader, with the inner bucket's own
// when it has one (measured as a GetWithETag).
func (b *Bucket) GetIfChanged(ctx context.Context, key, etag string) ([]byte, string, bool, error) {
	c := b.begin(OpGetWithETag)
	data, got, changed, err := bucket.GetIfChanged(ctx, b.inner, key, etag)
	return data, got, changed, c.end(err, int64(len(data)))
}

// Stat implements bucket.Reader.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	c := b.begin(OpStat)
	oi, err := b.inner.Stat(ctx, key)
	return oi, c.end(err, 0)
}

// List implements bucket.Reader. An error of fn ends the listing as it would
// without the wrapper; it is the caller's answer, not a failure of the listing.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	c := b.begin(OpList)
	var fnErr error
	err := b.inner.List(ctx, opts, func(oi bucket.ObjectInfo) error {
		fnErr = fn(oi)
		return fnErr
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		c.end(nil, 0)
		return err
	}
	return c.end(err, 0)
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	c := b.begin(OpPut)
	cr := &bucket.CountingReader{R: r}
	err := b.inner.Put(ctx, key, cr, size, opts)
	return c.end(err, cr.N)
}

// PutIf implements bucket.Conditional.
func (b *Bucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	c := b.begin(OpPutIf)
	cr := &bucket.CountingReader{R: r}
	etag, err := b.inner.PutIf(ctx, key, cr, size, cond)
	return etag, c.end(err, cr.N)
}

// Replace implements bucket.Replacer.
func (b *Bucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	c := b.begin(OpReplace)
	cr := &bucket.CountingReader{R: r}
	err := b.inner.Replace(ctx, key, cr, size, opts)
	return c.end(err, cr.N)
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	c := b.begin(OpDelete)
	return c.end(b.inner.Delete(ctx, key), 0)
}

// DeleteBatch implements bucket.BatchDeleter.
func (b *Bucket) DeleteBatch(ctx context.Context, keys []string) error {
	c := b.begin(OpDeleteBatch)
	return c.end(b.inner.DeleteBatch(ctx, keys), 0)
}

// Now implements bucket.Clock with the inner bucket's clock (not measured).
func (b *Bucket) Now(ctx context.Context) (time.Time, error) { return b.inner.Now(ctx) }
