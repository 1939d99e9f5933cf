// Package membucket is an in-memory bucket.Bucket for tests and for the mem:// URL.
//
// Keys are kept sorted, so List is a binary search plus a scan. Put copies the bytes
// in and Get hands out a reader over its own copy, so callers can reuse their
// buffers. Every method honours context cancellation like a remote backend would.
// The checksum given to Put is stored and returned by Get, Stat and List; a retried
// Put with the same non-empty checksum succeeds.
package membucket

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

var _ bucket.Bucket = (*Bucket)(nil)

// Bucket is an in-memory bucket. The zero value is not usable; call New.
// It is safe for concurrent use.
type Bucket struct {
	mu      sync.RWMutex
	objects map[string]object
	keys    []string // sorted keys of objects
	now     func() time.Time
}

type object struct {
	data []byte
	info bucket.ObjectInfo
}

// New returns an empty in-memory bucket.
func New() *Bucket {
	return &Bucket{objects: make(map[string]object), now: time.Now}
}

// Now is the bucket's clock: the clock that stamps ModTime (time.Now unless
// SetClock changed it).
func (b *Bucket) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.now(), nil
}

// SetClock replaces the clock that stamps ModTime and that Now reads (for tests
// of ages).
func (b *Bucket) SetClock(now func() time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = now
}

// Get returns a reader over a copy of key's bytes.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if err := check(ctx, key); err != nil {
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, err)
	}
	b.mu.RLock()
	obj, ok := b.objects[key]
	b.mu.RUnlock()
	if !ok {
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(bytes.Clone(obj.data))), obj.info, nil
}

// Stat returns key's metadata.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if err := check(ctx, key); err != nil {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, err)
	}
	b.mu.RLock()
	obj, ok := b.objects[key]
	b.mu.RUnlock()
	if !ok {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, bucket.ErrNotFound)
	}
	return obj.info, nil
}

// Put stores a copy of the object unless key exists (see bucket.Bucket.Put).
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	return b.store(ctx, "put", key, r, size, opts, false)
}

// Replace stores the object whether or not key exists (last writer wins).
func (b *Bucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	return b.store(ctx, "replace", key, r, size, opts, true)
}

func (b *Bucket) store(ctx context.Context, op, key string, r io.Reader, size int64, opts bucket.PutOptions, overwrite bool) error {
	if err := check(ctx, key); err != nil {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	data, err := readAll(r, size)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	// The source may have been slow: an ended context wins over a complete read.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, key, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.objects[key]; ok && !overwrite {
		if opts.Checksum != "" && old.info.Checksum == opts.Checksum {
			return nil
		}
		return fmt.Errorf("%s %s: %w", op, key, bucket.ErrExists)
	}
	b.set(key, data, fmt.Sprintf("mem-%x-%d", b.now().UnixNano(), len(data)), opts.Checksum)
	return nil
}

// set stores data under key, creating or replacing it. The caller holds b.mu.
func (b *Bucket) set(key string, data []byte, etag, checksum string) {
	if _, ok := b.objects[key]; !ok {
		i, _ := slices.BinarySearch(b.keys, key)
		b.keys = slices.Insert(b.keys, i, key)
	}
	b.objects[key] = object{data: data, info: bucket.ObjectInfo{
		Key:      key,
		Size:     int64(len(data)),
		ModTime:  b.now(),
		ETag:     etag,
		Checksum: checksum,
	}}
}

// Delete removes key; a missing key is not an error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := check(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objects[key]; !ok {
		return nil
	}
	delete(b.objects, key)
	if i, ok := slices.BinarySearch(b.keys, key); ok {
		b.keys = slices.Delete(b.keys, i, i+1)
	}
	return nil
}

// List calls fn for the matching keys in ascending byte order. It works on a
// snapshot taken when it starts, so fn may call back into the bucket.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	if err := bucket.ValidatePrefix(opts.Prefix); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	for _, info := range b.snapshot(opts) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list %s: %w", opts.Prefix, err)
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// snapshot returns what List reports for opts: keys after StartAfter with Prefix,
// grouped into common prefixes when Delimited, keeping only the prefixes that sort
// after StartAfter.
func (b *Bucket) snapshot(opts bucket.ListOptions) []bucket.ObjectInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	start, _ := slices.BinarySearch(b.keys, max(opts.Prefix, opts.StartAfter))
	var out []bucket.ObjectInfo
	for _, key := range b.keys[start:] {
		if !strings.HasPrefix(key, opts.Prefix) {
			break
		}
		if key <= opts.StartAfter {
			continue
		}
		if opts.Delimited {
			if i := strings.IndexByte(key[len(opts.Prefix):], '/'); i >= 0 {
				p := key[:len(opts.Prefix)+i+1]
				if p <= opts.StartAfter {
					continue // as S3: a prefix is listed only if it sorts after StartAfter
				}
				if len(out) == 0 || out[len(out)-1].Key != p {
					out = append(out, bucket.ObjectInfo{Key: p, IsPrefix: true})
				}
				continue
			}
		}
		out = append(out, b.objects[key].info)
	}
	return out
}

// check reports an ended context or an invalid key.
func check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return bucket.ValidateKey(key)
}

// readAll reads size bytes from r (to EOF if size < 0). A source shorter than size
// is an error.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size < 0 {
		return io.ReadAll(r)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read %d bytes: %w", size, err)
	}
	return data, nil
}
