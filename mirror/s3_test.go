package mirror_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// s3Options tune a client of the test server.
type s3Options struct {
	endpoint   string // default: the test server itself
	timeout    time.Duration
	maxRetries int
	create     bool
}

// newS3Client opens bucket name on the test server (or through opts.endpoint) and
// closes the client when the test ends.
func newS3Client(t testing.TB, name string, opts s3Options) *s3bucket.Bucket {
	t.Helper()
	endpoint, access, secret := s3test.S3Endpoint(t)
	if opts.endpoint != "" {
		endpoint = opts.endpoint
	}
	b, err := s3bucket.New(context.Background(), s3bucket.Config{
		Endpoint: endpoint, Bucket: name, Region: "us-east-1",
		AccessKey: access, SecretKey: secret, Insecure: true, Create: opts.create,
		RequestTimeout: opts.timeout, MaxRetries: opts.maxRetries,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// newS3TestBucket creates a fresh bucket on the test server and returns its name; the
// bucket and everything in it are removed when the test ends.
func newS3TestBucket(t testing.TB) string {
	t.Helper()
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "faultbucket-" + hex.EncodeToString(suffix)
	b := newS3Client(t, name, s3Options{create: true})
	t.Cleanup(func() { // runs before the client is closed
		s3test.Empty(t, b)
		require.NoError(t, b.Client().RemoveBucket(context.Background(), name))
	})
	return name
}

// openS3Bucket opens the test bucket spec (its name) on the test server, for the
// crash-test child and parent.
func openS3Bucket(t testing.TB, spec string) bucket.Bucket {
	return newS3Client(t, spec, s3Options{})
}

func TestMirror_CrashRecoveryS3(t *testing.T) {
	s3test.S3Endpoint(t)
	if os.Getenv(crashChildEnv) != "" {
		t.Skip()
	}
	name := newS3TestBucket(t)
	runCrashTest(t, "s3:"+name, func(t testing.TB, spec string) bucket.Bucket {
		return openS3Bucket(t, spec[len("s3:"):])
	})
}
