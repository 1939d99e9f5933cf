package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
)

// rcloneCopy copies src to dst with rclone (remote "minio:" is the test MinIO).
func rcloneCopy(t *testing.T, src, dst string) {
	t.Helper()
	s3test.Rclone(t, "copy", src, dst)
}

// readOutputs runs every read subcommand on store and returns their stdout by
// command line (the store URL left out), with the key prefix removed.
func readOutputs(t *testing.T, store, prefix string, sessions [][2]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	run := func(args ...string) {
		key := strings.Join(args, " ")
		args = append(args[:1:1], append([]string{"--store", store}, args[1:]...)...)
		out[key] = strings.ReplaceAll(ok(t, args...), prefix, "")
	}
	run("ls")
	run("ls", "--json")
	run("ls", "--segments", "--json")
	run("verify")
	run("verify", "--json")
	run("stats", "--json")
	require.Contains(t, out["stats --json"], `"payloads":{"count":1,`, "the image is a payload object")
	for _, s := range sessions {
		for _, cmd := range []string{"cat", "export", "context", "tree"} {
			run(cmd, "--agent", s[0], "--session", s[1])
		}
	}
	restored := t.TempDir()
	r := cli(t, "restore", "--store", store, "--out", restored)
	require.Equal(t, 0, r.code, r.stdout, r.stderr)
	out["restore"] = hashTree(t, restored)
	return out
}

// TestCLI_RcloneRoundTrip checks that a bucket copied to a directory by rclone works
// as --store file://DIR with every read subcommand, giving the same output as the
// bucket, and that a directory store copied into a bucket works through S3.
func TestCLI_RcloneRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		prefix string // key prefix of the S3 store
		// skip lists outputs not compared.
		skip []string
	}{
		{"bucket root", "", nil},
		// A compacted segment names its inputs relative to the session, so a store
		// read under another prefix still sees them as superseded (ls counts agree).
		{"under a prefix", "ops/transcripts", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testRcloneRoundTrip(t, tt.prefix, tt.skip) })
	}
}

func testRcloneRoundTrip(t *testing.T, prefix string, skip []string) {
	v3 := fixture(t, fixtureV3)
	s3 := s3BackendAt(prefix)
	keyPrefix := ""
	if prefix != "" {
		keyPrefix = prefix + "/"
	}
	// A session holding a large image, which the store keeps as a payload object.
	images := filepath.Join(t.TempDir(), "images.jsonl")
	img, _ := bigImage("i1", "h1", transcript.DefaultPayloadThreshold+100)
	require.NoError(t, os.WriteFile(images, []byte(`{"type":"session","version":3,"id":"h1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`+"\n"+img+"\n"), 0o644))
	populate := func(store string) [][2]string {
		ok(t, "import", "--store", store, "--agent", "coder", "--session", "imported", v3)
		ok(t, "import", "--store", store, "--agent", "coder", "--session", "images", images)
		r := cli(t, "demo", "--store", store, "--session", "raced", "--replicas", "3", "--turns", "2")
		require.Equal(t, 0, r.code, r.stderr)
		return [][2]string{{"coder", "imported"}, {"coder", "images"}, {"demo-agent", "raced"}}
	}
	bucketOf := func(url string) string {
		return strings.SplitN(strings.SplitN(strings.TrimPrefix(url, "s3://"), "?", 2)[0], "/", 2)[0]
	}
	compare := func(want, got map[string]string) {
		t.Helper()
		for _, k := range skip {
			delete(want, k)
			delete(got, k)
		}
		require.Equal(t, want, got)
	}

	t.Run("bucket to directory", func(t *testing.T) {
		store := s3.fresh(t)
		sessions := populate(store)
		want := readOutputs(t, store, keyPrefix, sessions)
		dir := t.TempDir()
		rcloneCopy(t, "minio:"+bucketOf(store), dir)
		got := readOutputs(t, "file://"+filepath.Join(dir, prefix), "", sessions)
		compare(want, got)
	})

	t.Run("directory to bucket", func(t *testing.T) {
		dir := t.TempDir()
		sessions := populate("file://" + dir)
		want := readOutputs(t, "file://"+dir, "", sessions)
		store := s3.fresh(t) // rclone creates the bucket
		rcloneCopy(t, dir, fmt.Sprintf("minio:%s/%s", bucketOf(store), prefix))
		got := readOutputs(t, store, keyPrefix, sessions)
		compare(want, got)
	})
}
