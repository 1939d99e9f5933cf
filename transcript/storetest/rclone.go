package storetest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Rclone runs rclone, an independent S3 client, with args against the test MinIO
// (S3Endpoint), configured through the environment only: the remote "minio:" is
// that MinIO. It is how tests check that a bucket copied by another tool into a
// directory (and back) still works. Without rclone the test is skipped, or fails
// under CI=true (bash .ci/run installs it).
func Rclone(t *testing.T, args ...string) {
	t.Helper()
	endpoint, access, secret := S3Endpoint(t)
	bin, err := exec.LookPath("rclone")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("rclone not installed (bash .ci/run installs it)")
		}
		t.Skip("rclone not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// The AWS SDK inside rclone refuses a custom CA bundle with its HTTP transport;
	// MinIO is plain HTTP here, so the variable is dropped.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"RCLONE_CONFIG=/dev/null",
		"RCLONE_CONFIG_MINIO_TYPE=s3",
		"RCLONE_CONFIG_MINIO_PROVIDER=Minio",
		"RCLONE_CONFIG_MINIO_ENDPOINT=http://"+endpoint,
		"RCLONE_CONFIG_MINIO_ACCESS_KEY_ID="+access,
		"RCLONE_CONFIG_MINIO_SECRET_ACCESS_KEY="+secret,
		"RCLONE_CONFIG_MINIO_REGION=us-east-1",
	)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "rclone %v: %s", args, out)
}
