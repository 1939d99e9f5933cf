package filebucket

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestWrite_DeletedOnceInPlace: a Delete of the object that lands between the
// write putting it in place and the fsync of its directory (which it prunes)
// undoes a write that succeeded: the write reports success, as a PUT followed
// by a DELETE does on S3. It used to fail with the directory's fsync ("no such
// file or directory"), and a compaction whose output another process's
// compaction took as an input and deleted at once failed with it.
func TestWrite_DeletedOnceInPlace(t *testing.T) {
	ctx := context.Background()
	const key = "ns/a/s/L1/out"
	data := []byte("segment")
	for _, tc := range []struct {
		name  string
		write func(b *Bucket) error
	}{
		{"Put", func(b *Bucket) error {
			return b.Put(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{})
		}},
		{"Replace", func(b *Bucket) error {
			return b.Replace(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(t.TempDir())
			require.NoError(t, err)
			deleted := false
			b.published = func() {
				require.NoError(t, b.Delete(ctx, key))
				deleted = true
			}
			require.NoError(t, tc.write(b))
			require.True(t, deleted, "the Delete ran between the write and its fsync")
			_, _, err = b.Get(ctx, key)
			require.ErrorIs(t, err, bucket.ErrNotFound)
		})
	}
}
