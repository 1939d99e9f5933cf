package filebucket_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// TestBucket_RootRemoved: a root directory removed under an open bucket is
// a bucket deleted: a write fails with bucket.ErrNoBucket and does not
// create the root again (a process's late writes would otherwise fill a
// store an operator removed), as S3 answers NoSuchBucket. Once the root is
// there again, writes work.
func TestBucket_RootRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, b.Put(ctx, "ns/a/k", strings.NewReader("x"), 1, bucket.PutOptions{}))
	require.NoError(t, os.RemoveAll(dir))
	err = b.Put(ctx, "ns/a/k2", strings.NewReader("x"), 1, bucket.PutOptions{})
	require.ErrorIs(t, err, bucket.ErrNoBucket)
	require.NoDirExists(t, dir)
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, b.Put(ctx, "ns/a/k2", strings.NewReader("x"), 1, bucket.PutOptions{}))
}
