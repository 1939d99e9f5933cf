package s3test

import (
	"os"
	"testing"

	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
)

// Environment variables read by the endpoints of the engines.
const (
	// EnvS3Endpoint names the host:port of the MinIO test server
	// (deploy/minio/minio.sh env prints it).
	EnvS3Endpoint = "TRANSCRIPT_TEST_S3_ENDPOINT"
	// EnvSeaweedFSEndpoint names the host:port of the S3 gateway of the SeaweedFS
	// test server (deploy/seaweedfs/seaweedfs.sh env prints it).
	EnvSeaweedFSEndpoint = "TRANSCRIPT_TEST_SEAWEEDFS_ENDPOINT"
	// EnvAccessKey and EnvSecretKey carry the credentials of the test servers (one
	// pair for both engines: the deploy scripts configure the same).
	EnvAccessKey = "AWS_ACCESS_KEY_ID"
	EnvSecretKey = "AWS_SECRET_ACCESS_KEY"
	// EnvCI is set to "true" by CI systems; there a missing endpoint fails the test.
	EnvCI = "CI"
)

// Engine is an S3-compatible server the S3 tests run against.
type Engine struct {
	// Name names the engine in subtest names: "minio", "seaweedfs".
	Name string
	// Env is the variable that names its endpoint (host:port).
	Env string
	// Start is the command that starts a local one and prints its Env line.
	Start string
	// Conformance are the limits of the engine the conformance suite allows for.
	Conformance buckettest.Options
}

// MinIO is the test engine every S3 test runs against.
func MinIO() Engine {
	return Engine{Name: "minio", Env: EnvS3Endpoint,
		Start: `bash deploy/minio/minio.sh start && eval "$(bash deploy/minio/minio.sh env)"`,
		// MinIO, unlike AWS S3, cannot hold both "a/b" and "a/b/c": it stores
		// objects as files in directories, as a file system would.
		Conformance: buckettest.Options{FileDirConflict: true}}
}

// SeaweedFS is the second engine: the conformance suite, strict mode and the
// concurrent-writer suites run against it too.
func SeaweedFS() Engine {
	return Engine{Name: "seaweedfs", Env: EnvSeaweedFSEndpoint,
		Start: `bash deploy/seaweedfs/seaweedfs.sh start && eval "$(bash deploy/seaweedfs/seaweedfs.sh env)"`,
		// SeaweedFS keeps objects in directories too, and removes a directory its
		// last object left empty minutes later (TestSeaweedFS_EmptiedPrefixLingers).
		Conformance: buckettest.Options{FileDirConflict: true, StaleEmptyPrefixes: true}}
}

// Engines returns every engine, MinIO first.
func Engines() []Engine { return []Engine{MinIO(), SeaweedFS()} }

// Endpoint returns the engine's test server from the environment (its Env,
// EnvAccessKey, EnvSecretKey). When its variable is not set it skips the test,
// except under CI=true, where it fails it: CI must run the S3 tests against every
// engine, not silently skip them.
func (e Engine) Endpoint(t testing.TB) (endpoint, access, secret string) {
	t.Helper()
	endpoint = os.Getenv(e.Env)
	if endpoint == "" {
		msg := e.Env + " is not set; start " + e.Name + " with " + e.Start
		if os.Getenv(EnvCI) == "true" {
			t.Fatal(msg + " (CI=true: S3 tests must run)")
		}
		t.Skip(msg)
	}
	return endpoint, os.Getenv(EnvAccessKey), os.Getenv(EnvSecretKey)
}

// S3Endpoint returns the MinIO test server: MinIO().Endpoint(t).
func S3Endpoint(t testing.TB) (endpoint, access, secret string) {
	t.Helper()
	return MinIO().Endpoint(t)
}
