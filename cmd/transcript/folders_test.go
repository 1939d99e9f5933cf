package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
)

// makeFolder makes what a console's "create folder" leaves in the store at
// storeURL: in a bucket a zero-byte object whose key ends in "/" (written with
// minio-go, since the store's own bucket refuses such a key), in a directory an
// empty directory.
func makeFolder(t *testing.T, storeURL, key string) {
	t.Helper()
	if dir, ok := strings.CutPrefix(storeURL, "file://"); ok {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.FromSlash(key)), 0o755))
		return
	}
	u, err := url.Parse(storeURL)
	require.NoError(t, err)
	endpoint, access, secret := s3test.S3Endpoint(t)
	c, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, "")})
	require.NoError(t, err)
	if prefix := strings.Trim(u.Path, "/"); prefix != "" {
		key = prefix + "/" + key
	}
	_, err = c.PutObject(context.Background(), u.Host, key, strings.NewReader(""), 0, minio.PutObjectOptions{})
	require.NoError(t, err)
}

// testFolders: folders an operator made in the bucket (an S3 console, s3cmd,
// rclone with directory markers) are not sessions. The commands over many
// sessions leave a prefix that holds only folders out, instead of failing on it
// (ls, restore) or reporting it as a broken session (verify, stats); naming it
// is still "not found".
func testFolders(t *testing.T, b backend) {
	store := b.fresh(t)
	sel := []string{"--store", store, "--agent", "coder", "--session", "s1"}
	ok(t, append(append([]string{"import"}, sel...), fixture(t, "../../sessiontree/testdata/pi-v3-browse-session.jsonl"))...)
	for _, key := range []string{"default/", "default/coder/", "default/coder/s1/", "default/coder/s1/L0/",
		"default/coder/s2/", "default/coder/s3/L0/", "default/ghost/"} {
		makeFolder(t, store, key)
	}

	out := ok(t, "ls", "--store", store)
	require.Contains(t, out, "default    coder  s1 ")
	require.NotContains(t, out, "s2")
	require.NotContains(t, out, "s3")
	require.Equal(t, "0 problems in 1 segment of 1 session (12 entries, not counting 1 session header)\n", ok(t, "verify", "--store", store))
	out = ok(t, "stats", "--store", store)
	require.Contains(t, out, "agents       1\nsessions     1\n")
	out = ok(t, "restore", "--store", store, "--out", t.TempDir())
	require.Contains(t, out, "restored 1, skipped 0 (identical), failed 0 of 1 session ")

	r := cli(t, "ls", "--store", store, "--agent", "coder", "--session", "s2")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "not found")
	require.Equal(t, ok(t, append([]string{"export"}, sel...)...), ok(t, append([]string{"export"}, sel...)...))
}
