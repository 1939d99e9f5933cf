package transcript_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// TestStore_RcloneInterop checks the disaster-recovery promise with an independent
// S3 tool: a bucket written through S3 and copied by rclone into a directory is
// readable as a local-directory store with the same merged entries, and a directory
// store copied by rclone into a bucket is readable through S3.
func TestStore_RcloneInterop(t *testing.T) {
	endpoint, access, secret := s3test.S3Endpoint(t)
	ctx := context.Background()
	newS3 := func(name string) *transcript.Store {
		b, err := s3bucket.New(ctx, s3bucket.Config{Endpoint: endpoint, AccessKey: access, SecretKey: secret,
			Insecure: true, Create: true, Bucket: name})
		require.NoError(t, err)
		t.Cleanup(func() { b.Close() })
		return newStore(t, b, transcript.Config{Prefix: "prod/transcripts"})
	}
	write := func(s *transcript.Store) *transcript.MergeResult {
		for i := range 3 {
			w := newWriter(t, fmt.Sprintf("replica-%d", i))
			for j := range 4 {
				_, err := s.AppendSegment(ctx, ref, [][]byte{entry("root", ""), entry(fmt.Sprintf("e%d-%d", i, j), "root")}, w)
				require.NoError(t, err)
			}
		}
		res, err := s.ReadAll(ctx, ref)
		require.NoError(t, err)
		return res
	}
	raw := func(res *transcript.MergeResult) []string {
		out := make([]string, len(res.Entries))
		for i, e := range res.Entries {
			out[i] = string(e.Raw)
		}
		return out
	}

	t.Run("bucket to directory", func(t *testing.T) {
		name := fmt.Sprintf("transcript-rclone-out-%d-%d", os.Getpid(), time.Now().UnixNano())
		want := write(newS3(name))
		dir := t.TempDir()
		s3test.Rclone(t, "copy", "minio:"+name, dir)
		fb, err := filebucket.New(dir)
		require.NoError(t, err)
		got, err := newStore(t, fb, transcript.Config{Prefix: "prod/transcripts"}).ReadAll(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, raw(want), raw(got))
		require.Len(t, got.Segments, 12)
	})

	t.Run("directory to bucket", func(t *testing.T) {
		dir := t.TempDir()
		fb, err := filebucket.New(dir)
		require.NoError(t, err)
		want := write(newStore(t, fb, transcript.Config{Prefix: "prod/transcripts"}))
		name := fmt.Sprintf("transcript-rclone-in-%d-%d", os.Getpid(), time.Now().UnixNano())
		s3 := newS3(name) // creates the bucket
		s3test.Rclone(t, "copy", dir, "minio:"+name)
		got, err := s3.ReadAll(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, raw(want), raw(got))
		_, err = os.Stat(filepath.Join(dir, "prod", "transcripts", ref.Namespace))
		require.NoError(t, err, "the directory has the bucket's key layout")
	})
}
