package s3bucket

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// errListTimeout ends a listing whose server went quiet for a request timeout.
var errListTimeout = errors.New("list: no answer within the request timeout")

// List lists with ListObjectsV2. Keys that are not valid bucket keys (written by
// other tools) are skipped.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	if err := bucket.ValidatePrefix(opts.Prefix); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, err)
	}
	// The listing runs in pages; the timeout applies to the wait for each item.
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(b.cfg.RequestTimeout, func() { cancel(errListTimeout) })
	defer watchdog.Stop()

	var gathered []bucket.ObjectInfo // delimited listings, sorted at the end
	visit := func(oi minio.ObjectInfo) error {
		item := info(oi)
		if opts.Delimited && strings.HasSuffix(oi.Key, "/") {
			item = bucket.ObjectInfo{Key: oi.Key, IsPrefix: true}
			if bucket.ValidatePrefix(oi.Key) != nil {
				return nil
			}
		} else if bucket.ValidateKey(oi.Key) != nil {
			return nil
		}
		if opts.Delimited {
			gathered = append(gathered, item)
			return nil
		}
		return fn(item)
	}
	// A first page asked for (opts.FirstPage) is a listing of its own, cut
	// after that many keys: the iterator sends a request only when the one
	// before is used up, so stopping there asks for nothing more. The rest
	// follows its last key in full pages.
	startAfter, page := opts.StartAfter, 0
	if opts.FirstPage > 0 && !opts.Delimited {
		page = opts.FirstPage
	}
	for {
		n, last := 0, ""
		for oi := range b.client.ListObjectsIter(lctx, b.cfg.Bucket, minio.ListObjectsOptions{
			Prefix:     opts.Prefix,
			StartAfter: startAfter,
			Recursive:  !opts.Delimited,
			MaxKeys:    page,
		}) {
			watchdog.Reset(b.cfg.RequestTimeout)
			if oi.Err != nil {
				err := oi.Err
				if cause := context.Cause(lctx); errors.Is(cause, errListTimeout) {
					err = fmt.Errorf("%w: %w (%w)", bucket.ErrUnavailable, cause, err)
				} else {
					err = classify(ctx, err)
				}
				return fmt.Errorf("list %s: %w", opts.Prefix, err)
			}
			if err := visit(oi); err != nil {
				return err
			}
			if n, last = n+1, oi.Key; n == page {
				break
			}
		}
		if page == 0 || n < page || lctx.Err() != nil {
			break
		}
		startAfter, page = last, 0
	}
	if err := context.Cause(lctx); err != nil {
		return fmt.Errorf("list %s: %w", opts.Prefix, classify(ctx, err))
	}
	slices.SortFunc(gathered, func(x, y bucket.ObjectInfo) int { return strings.Compare(x.Key, y.Key) })
	for _, item := range gathered {
		if err := fn(item); err != nil {
			return err
		}
	}
	return nil
}
