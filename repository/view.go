package repository

import (
	"context"
	"fmt"
	"io"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// viewBucket shows a subset of a bucket's segments: segment keys that keep rejects
// do not exist for it (List skips them, Get and Stat answer ErrNotFound). Other
// keys pass through. A transcript.Store over a viewBucket therefore union-merges
// exactly the kept segments with the store's own merge rules, which is how strict
// reads (only committed segments) and reads as of a time are made.
type viewBucket struct {
	bucket.Bucket
	prefix string
	keep   func(transcript.SegmentInfo) bool
}

func (v viewBucket) hidden(key string) bool {
	info, err := transcript.ParseKey(v.prefix, key)
	return err == nil && !v.keep(info)
}

func (v viewBucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if v.hidden(key) {
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
	}
	return v.Bucket.Get(ctx, key)
}

func (v viewBucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if v.hidden(key) {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, bucket.ErrNotFound)
	}
	return v.Bucket.Stat(ctx, key)
}

func (v viewBucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	return v.Bucket.List(ctx, opts, func(oi bucket.ObjectInfo) error {
		if !oi.IsPrefix && v.hidden(oi.Key) {
			return nil
		}
		return fn(oi)
	})
}

// view returns a read store of the repository's namespace that sees only the
// segments keep accepts (all, when keep is nil).
func (r *Repository) view(keep func(transcript.SegmentInfo) bool) (*transcript.Store, error) {
	if keep == nil {
		return r.store, nil
	}
	s, err := transcript.New(transcript.Config{
		Bucket:    viewBucket{Bucket: r.bucket, prefix: r.store.Prefix(), keep: keep},
		Prefix:    r.store.Prefix(),
		Namespace: r.ns,
		Clock:     r.store.Clock(),
		Encoder:   r.enc,
		Decoder:   r.dec,
	})
	if err != nil {
		return nil, fmt.Errorf("read view: %w", err)
	}
	return s, nil
}
