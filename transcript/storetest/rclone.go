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

// RcloneRemote names an S3 endpoint for rclone, configured through the environment
// only (no config file).
type RcloneRemote struct {
	Name     string // the remote's name, as in "NAME:bucket/prefix"
	Endpoint string // the endpoint URL, with its scheme
	Access   string // the access key id
	Secret   string // the secret access key
	Region   string // the region; "" is us-east-1
}

// RcloneCommand returns the command that runs rclone (bin) with args against the
// remote r, configured through the environment only. The one place that knows how
// rclone is set up for a MinIO: tests and the benchmark both run rclone through it.
func RcloneCommand(ctx context.Context, bin string, r RcloneRemote, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	// The AWS SDK inside rclone refuses a custom CA bundle with its HTTP transport;
	// MinIO is plain HTTP here, so the variable is dropped.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
			env = append(env, kv)
		}
	}
	region := r.Region
	if region == "" {
		region = "us-east-1"
	}
	v := "RCLONE_CONFIG_" + strings.ToUpper(r.Name) + "_"
	cmd.Env = append(env,
		"RCLONE_CONFIG=/dev/null",
		v+"TYPE=s3",
		v+"PROVIDER=Minio",
		v+"ENDPOINT="+r.Endpoint,
		v+"ACCESS_KEY_ID="+r.Access,
		v+"SECRET_ACCESS_KEY="+r.Secret,
		v+"REGION="+region,
	)
	return cmd
}

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
	cmd := RcloneCommand(ctx, bin, RcloneRemote{Name: "minio", Endpoint: "http://" + endpoint, Access: access, Secret: secret}, args...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "rclone %v: %s", args, out)
}
