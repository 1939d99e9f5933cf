package s3bucket_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestBucket_DeletedBucket: every request to a bucket deleted under an open
// Bucket wraps bucket.ErrNoBucket (S3's NoSuchBucket), not an unclassified
// error, nor bucket.ErrNotFound or bucket.ErrUnavailable, so that a caller
// (a follower's outbox) tells a deleted bucket from a missing key or an
// outage. A HEAD's answer has no body: MinIO names the code in a header
// (elsewhere a HEAD of a key in a deleted bucket is a missing key). Delete is
// no success either: nothing is there to delete from. MinIO only: SeaweedFS
// creates a bucket again on a PUT into it.
func TestBucket_DeletedBucket(t *testing.T) {
	for _, e := range []s3test.Engine{s3test.MinIO()} {
		t.Run(e.Name, func(t *testing.T) {
			b := e.NewBucket(t, "hnobucket-")
			ctx := t.Context()
			require.NoError(t, b.Put(ctx, "k", strings.NewReader("x"), 1, bucket.PutOptions{}))
			require.NoError(t, b.Client().RemoveBucketWithOptions(ctx, b.Name(), minio.RemoveBucketOptions{ForceDelete: true}))
			calls := map[string]func(ctx context.Context) error{
				"Put": func(ctx context.Context) error {
					return b.Put(ctx, "k2", strings.NewReader("x"), 1, bucket.PutOptions{})
				},
				"GetWithETag": func(ctx context.Context) error { _, _, err := b.GetWithETag(ctx, "k"); return err },
				"List": func(ctx context.Context) error {
					return b.List(ctx, bucket.ListOptions{}, func(bucket.ObjectInfo) error { return nil })
				},
				"Delete": func(ctx context.Context) error { return b.Delete(ctx, "k") },
				"Stat":   func(ctx context.Context) error { _, err := b.Stat(ctx, "k"); return err },
			}
			for name, call := range calls {
				err := call(ctx)
				require.ErrorIs(t, err, bucket.ErrNoBucket, name)
				require.False(t, errors.Is(err, bucket.ErrNotFound) || errors.Is(err, bucket.ErrUnavailable), name)
			}
		})
	}
}
