// Package rclone runs rclone, an independent S3 client, against an S3 endpoint
// configured through the environment only (no config file). The benchmark's
// restore baseline and the interoperability tests both run rclone through it.
package rclone

import (
	"context"
	"os"
	"os/exec"
	"strings"
)

// Remote names an S3 endpoint for rclone.
type Remote struct {
	Name     string // the remote's name, as in "NAME:bucket/prefix"
	Endpoint string // the endpoint URL, with its scheme
	Access   string // the access key id
	Secret   string // the secret access key
	Region   string // the region; "" is us-east-1
}

// Command returns the command that runs rclone (bin) with args against the
// remote r, configured through the environment only. The one place that knows how
// rclone is set up for an S3-compatible server such as MinIO.
func Command(ctx context.Context, bin string, r Remote, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	// The AWS SDK inside rclone refuses a custom CA bundle with its HTTP transport;
	// the test servers are plain HTTP, so the variable is dropped.
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
