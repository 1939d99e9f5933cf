package filebucket_test

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

func TestBucket_Conformance(t *testing.T) {
	opts := buckettest.Options{ChecksumNotStored: true, FileDirConflict: true}
	buckettest.RunWithOptions(t, opts, func(t *testing.T) bucket.Bucket {
		b, err := filebucket.New(t.TempDir())
		require.NoError(t, err)
		return b
	})
}

func TestBucket_Layout(t *testing.T) {
	dir := t.TempDir()
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	ctx := t.Context()

	// A tree copied in by an S3 tool is readable as is.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "ns", "agent"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ns", "agent", "seg.zst"), []byte("copied"), 0o644))
	rc, info, err := b.Get(ctx, "ns/agent/seg.zst")
	require.NoError(t, err)
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.NoError(t, rc.Close())
	require.Equal(t, "copied", string(data))
	require.Equal(t, int64(6), info.Size)

	// A Put lands at the same path, and nothing else is written.
	require.NoError(t, b.Put(ctx, "ns/agent/new.zst", strings.NewReader("new"), 3, bucket.PutOptions{Checksum: "c"}))
	got, err := os.ReadFile(filepath.Join(dir, "ns", "agent", "new.zst"))
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	require.Equal(t, []string{"ns/agent/new.zst", "ns/agent/seg.zst"}, files(t, dir))
}

func TestBucket_TempFiles(t *testing.T) {
	dir := t.TempDir()
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, b.Put(ctx, "s/L0/seg", strings.NewReader("x"), 1, bucket.PutOptions{}))

	// What a crash between write and publish leaves behind.
	old := filepath.Join(dir, "s", "L0", ".tmp-crashed")
	require.NoError(t, os.WriteFile(old, []byte("partial"), 0o600))
	require.NoError(t, os.Chtimes(old, time.Now().Add(-2*time.Hour), time.Now().Add(-2*time.Hour)))
	fresh := filepath.Join(dir, "t", ".tmp-inflight")
	require.NoError(t, os.MkdirAll(filepath.Dir(fresh), 0o755))
	require.NoError(t, os.WriteFile(fresh, []byte("writing"), 0o600))

	require.Equal(t, []string{"s/L0/seg"}, list(t, b, bucket.ListOptions{}))
	require.Equal(t, []string{"s/"}, list(t, b, bucket.ListOptions{Delimited: true}),
		"a directory holding only temp files is not a common prefix")
	_, err = b.Stat(ctx, "s/L0/.tmp-crashed")
	require.ErrorIs(t, err, bucket.ErrInvalidKey, "temp names are reserved")

	n, err := b.CleanTemp(ctx, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoFileExists(t, old)
	require.FileExists(t, fresh, "a recent temp file may belong to a write in progress")

	n, err = b.CleanTemp(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoDirExists(t, filepath.Join(dir, "t"), "emptied directories are pruned")
}

func TestBucket_DeletePrunes(t *testing.T) {
	dir := t.TempDir()
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, b.Put(ctx, "a/b/c/d", strings.NewReader("x"), 1, bucket.PutOptions{}))
	require.NoError(t, b.Put(ctx, "a/e", strings.NewReader("y"), 1, bucket.PutOptions{}))
	require.NoError(t, b.Delete(ctx, "a/b/c/d"))
	require.NoDirExists(t, filepath.Join(dir, "a", "b"))
	require.DirExists(t, filepath.Join(dir, "a"))
	require.NoError(t, b.Delete(ctx, "a/e"))
	require.NoDirExists(t, filepath.Join(dir, "a"))
	require.DirExists(t, dir, "the root stays")
}

func TestBucket_FileDirConflict(t *testing.T) {
	b, err := filebucket.New(t.TempDir())
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, b.Put(ctx, "a/b", strings.NewReader("x"), 1, bucket.PutOptions{}))
	require.NoError(t, b.Put(ctx, "c/d/e", strings.NewReader("x"), 1, bucket.PutOptions{}))

	err = b.Put(ctx, "a/b/c", strings.NewReader("x"), 1, bucket.PutOptions{})
	require.ErrorIs(t, err, bucket.ErrInvalidKey)
	err = b.Put(ctx, "c/d", strings.NewReader("x"), 1, bucket.PutOptions{Checksum: "x"})
	require.ErrorIs(t, err, bucket.ErrInvalidKey)
	_, err = b.Stat(ctx, "c/d")
	require.ErrorIs(t, err, bucket.ErrNotFound, "a directory is not an object")
	_, _, err = b.Get(ctx, "c/d")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	require.NoError(t, b.Delete(ctx, "c/d"))
	require.Equal(t, []string{"a/b", "c/d/e"}, list(t, b, bucket.ListOptions{}))
}

func TestBucket_Replace(t *testing.T) {
	b, err := filebucket.New(t.TempDir())
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, b.Replace(ctx, "legacy/s.jsonl", strings.NewReader("v1"), 2, bucket.PutOptions{}))
	require.NoError(t, b.Replace(ctx, "legacy/s.jsonl", strings.NewReader("v2, longer"), -1, bucket.PutOptions{}))
	err = b.Replace(ctx, "legacy/s.jsonl", buckettest.FailingReader([]byte("v3"), 1), -1, bucket.PutOptions{})
	require.ErrorIs(t, err, buckettest.ErrInjected)
	rc, _, err := b.Get(ctx, "legacy/s.jsonl")
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	require.Equal(t, "v2, longer", string(data))
	require.Equal(t, []string{"legacy/s.jsonl"}, list(t, b, bucket.ListOptions{}))
}

func TestNew_CreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "y")
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	require.DirExists(t, dir)
	require.Equal(t, dir, b.Dir())
	_, err = filebucket.New("")
	require.Error(t, err)
}

func list(t *testing.T, b bucket.Reader, opts bucket.ListOptions) []string {
	t.Helper()
	var keys []string
	require.NoError(t, b.List(t.Context(), opts, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	return keys
}

// files returns every file under dir, as slash-separated relative names.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	}))
	return out
}
