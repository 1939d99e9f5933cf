package s3test

import (
	"os"
	"testing"
)

// Environment variables read by S3Endpoint.
const (
	// EnvS3Endpoint names the host:port of an S3-compatible server for tests
	// (deploy/minio/minio.sh env prints it).
	EnvS3Endpoint = "TRANSCRIPT_TEST_S3_ENDPOINT"
	// EnvAccessKey and EnvSecretKey carry the test server's credentials.
	EnvAccessKey = "AWS_ACCESS_KEY_ID"
	EnvSecretKey = "AWS_SECRET_ACCESS_KEY"
	// EnvCI is set to "true" by CI systems; there a missing endpoint fails the test.
	EnvCI = "CI"
)

// S3Endpoint returns the S3 test server from the environment (EnvS3Endpoint,
// EnvAccessKey, EnvSecretKey). When no endpoint is set it skips the test, except
// under CI=true, where it fails it: CI must run the S3 tests, not silently skip them.
// Start a local server with:
//
//	bash deploy/minio/minio.sh start && eval "$(bash deploy/minio/minio.sh env)"
func S3Endpoint(t testing.TB) (endpoint, access, secret string) {
	t.Helper()
	endpoint = os.Getenv(EnvS3Endpoint)
	if endpoint == "" {
		const msg = EnvS3Endpoint + " is not set; start MinIO with " +
			`bash deploy/minio/minio.sh start && eval "$(bash deploy/minio/minio.sh env)"`
		if os.Getenv(EnvCI) == "true" {
			t.Fatal(msg + " (CI=true: S3 tests must run)")
		}
		t.Skip(msg)
	}
	return endpoint, os.Getenv(EnvAccessKey), os.Getenv(EnvSecretKey)
}
