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
	for oi := range b.client.ListObjectsIter(lctx, b.cfg.Bucket, minio.ListObjectsOptions{
		Prefix:     opts.Prefix,
		StartAfter: opts.StartAfter,
		Recursive:  !opts.Delimited,
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
		item := info(oi)
		if opts.Delimited && strings.HasSuffix(oi.Key, "/") {
			item = bucket.ObjectInfo{Key: oi.Key, IsPrefix: true}
			if bucket.ValidatePrefix(oi.Key) != nil {
				continue
			}
		} else if bucket.ValidateKey(oi.Key) != nil {
			continue
		}
		if opts.Delimited {
			gathered = append(gathered, item)
			continue
		}
		if err := fn(item); err != nil {
			return err
		}
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
