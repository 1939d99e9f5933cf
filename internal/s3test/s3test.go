// Package s3test is test support for the S3 tests of every package: the S3 test
// servers named by the environment, one per engine (MinIO, and SeaweedFS as a
// second engine), fresh buckets on them (Engine.NewBucket) and their emptying
// (Empty), and rclone against MinIO (Rclone). Only tests import it. It lives outside
// transcript/ because it uses minio-go directly (to remove a bucket), which only the
// S3 backend may do there.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// NewS3Bucket creates a bucket named namePrefix plus a random suffix on the MinIO
// test server: MinIO().NewBucket(t, namePrefix).
func NewS3Bucket(t testing.TB, namePrefix string) *s3bucket.Bucket {
	t.Helper()
	return MinIO().NewBucket(t, namePrefix)
}

// NewBucket creates a bucket named namePrefix plus a random suffix on the engine's
// test server (see Endpoint: it fails under CI=true when none is configured, and
// skips otherwise) and removes the bucket and its objects when the test ends.
func (e Engine) NewBucket(t testing.TB, namePrefix string) *s3bucket.Bucket {
	t.Helper()
	endpoint, access, secret := e.Endpoint(t)
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	b, err := s3bucket.New(t.Context(), s3bucket.Config{
		Endpoint: endpoint, AccessKey: access, SecretKey: secret, Region: "us-east-1",
		Insecure: true, Create: true, Bucket: namePrefix + hex.EncodeToString(suffix),
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
		// ForceDelete (a MinIO extension, ignored elsewhere) also purges what
		// listings cannot show.
		_ = c.RemoveBucketWithOptions(ctx, b.Name(), minio.RemoveBucketOptions{ForceDelete: true})
		_ = b.Close()
	})
	return b
}

// Empty deletes every object b lists, within a minute, failing t on an error.
func Empty(t testing.TB, b bucket.Bucket) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var keys []string
	require.NoError(t, b.List(ctx, bucket.ListOptions{}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	for _, k := range keys {
		require.NoError(t, b.Delete(ctx, k))
	}
}
