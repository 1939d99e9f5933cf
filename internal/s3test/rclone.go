package s3test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/rclone"
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
	cmd := rclone.Command(ctx, bin, rclone.Remote{Name: "minio", Endpoint: "http://" + endpoint, Access: access, Secret: secret}, args...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "rclone %v: %s", args, out)
}
