package s3bucket_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newTestBucket creates a fresh bucket on the test server and removes it, with
// everything in it, when the test ends.
func newTestBucket(t *testing.T) *s3bucket.Bucket {
	t.Helper()
	endpoint, access, secret := s3test.S3Endpoint(t)
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	b, err := s3bucket.New(t.Context(), s3bucket.Config{
		Endpoint:  endpoint,
		Bucket:    "buckettest-" + hex.EncodeToString(suffix),
		Region:    "us-east-1",
		AccessKey: access,
		SecretKey: secret,
		Insecure:  true,
		Create:    true,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		c := b.Client()
		for oi := range c.ListObjectsIter(ctx, b.Name(), minio.ListObjectsOptions{Recursive: true}) {
			if oi.Err == nil {
				_ = c.RemoveObject(ctx, b.Name(), oi.Key, minio.RemoveObjectOptions{})
			}
		}
		// ForceDelete (a MinIO extension) also purges what listings cannot show.
		require.NoError(t, c.RemoveBucketWithOptions(ctx, b.Name(), minio.RemoveBucketOptions{ForceDelete: true}))
		require.NoError(t, b.Close())
	})
	return b
}

func TestBucket_Conformance(t *testing.T) {
	// MinIO, unlike AWS S3, cannot list both "a/b" and "a/b/c": it stores objects
	// as directories, as a file system would.
	opts := buckettest.Options{FileDirConflict: true}
	buckettest.RunWithOptions(t, opts, func(t *testing.T) bucket.Bucket { return newTestBucket(t) })
}
