package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestLs_ObjectHidingSessionPrefix: an object named exactly like a session's
// (or an agent's) key prefix, which an S3 tool writes when it copies a file to
// default/coder/s1 while the session's segments are under default/coder/s1/...,
// hides the segments from MinIO's listings: ls (with --segments or not) finds
// no session. It used to say `agent "" in namespace "default": not found`,
// naming nothing that was asked; it names what was asked and the object.
func TestLs_ObjectHidingSessionPrefix(t *testing.T) {
	for _, hider := range []string{"default/coder/s1", "default/coder"} {
		t.Run(hider, func(t *testing.T) {
			b := s3test.NewS3Bucket(t, "hc-ls-hide-")
			endpoint, _, _ := s3test.S3Endpoint(t)
			store := fmt.Sprintf("s3://%s?endpoint=%s&insecure=true", b.Name(), endpoint)
			r := cliWith(t, cmdOpts{stdin: headerLine("s1") + "\n" + entryLine("e1", "") + "\n"},
				"append", "--store", store+"&create=true", "--agent", "coder", "--session", "s1")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, ok(t, "ls", "--store", store, "--segments"), "default/coder/s1/L0/")
			require.NoError(t, b.Put(t.Context(), hider, strings.NewReader("x"), 1, bucket.PutOptions{}))

			tests := []struct {
				args []string
				what string
			}{
				{[]string{"--segments"}, `sessions in namespace "default": not found`},
				{nil, `sessions in namespace "default": not found`},
				{[]string{"--agent", "coder", "--segments"}, `agent "coder" in namespace "default": not found`},
				{[]string{"--agent", "coder", "--session", "s1", "--segments"}, `session default/coder/s1: not found`},
			}
			for _, tt := range tests {
				r := cli(t, append([]string{"ls", "--store", store}, tt.args...)...)
				require.Equal(t, 1, r.code, "%v: %s", tt.args, r.stdout)
				require.Contains(t, r.stderr, tt.what, tt.args)
				require.Contains(t, r.stderr, "an object named like a key prefix of the store, "+hider+", which hides", tt.args)
			}
		})
	}
}
