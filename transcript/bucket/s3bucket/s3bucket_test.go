package s3bucket_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The conformance suite, strict mode's conditional writes included, against every
// S3 engine: MinIO and SeaweedFS.
func TestBucket_Conformance(t *testing.T) {
	// MinIO and SeaweedFS, unlike AWS S3, cannot hold both "a/b" and "a/b/c": they
	// store objects as files in directories, as a file system would.
	opts := buckettest.Options{FileDirConflict: true}
	for _, e := range s3test.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			buckettest.RunWithOptions(t, opts, func(t *testing.T) bucket.Bucket { return e.NewBucket(t, "buckettest-") })
		})
	}
}
