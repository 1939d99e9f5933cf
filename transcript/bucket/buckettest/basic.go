package buckettest

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

func (s suite) missingKey(t *testing.T, b bucket.Bucket) {
	for _, key := range []string{"missing", "no/such/key"} {
		_, _, err := b.Get(t.Context(), key)
		require.ErrorIs(t, err, bucket.ErrNotFound, "get %s", key)
		_, err = b.Stat(t.Context(), key)
		require.ErrorIs(t, err, bucket.ErrNotFound, "stat %s", key)
	}
	require.Empty(t, list(t, b, bucket.ListOptions{}))
}

func (s suite) roundTrip(t *testing.T, b bucket.Bucket) {
	before := time.Now().Add(-time.Minute)
	data := []byte(`{"type":"message","id":"a1","parentId":null}` + "\n")
	tests := []struct {
		name string
		size int64
	}{
		{"known size", int64(len(data))},
		{"unknown size", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "rt/" + strings.ReplaceAll(tt.name, " ", "-") + ".jsonl.zst"
			opts := bucket.PutOptions{Checksum: sum(data), ContentType: "application/zstd"}
			require.NoError(t, b.Put(t.Context(), key, bytes.NewReader(data), tt.size, opts))

			rc, info, err := b.Get(t.Context(), key)
			require.NoError(t, err)
			got, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			require.Equal(t, data, got)
			require.Equal(t, key, info.Key)
			require.Equal(t, int64(len(data)), info.Size)

			st, err := b.Stat(t.Context(), key)
			require.NoError(t, err)
			require.Equal(t, key, st.Key)
			require.Equal(t, int64(len(data)), st.Size)
			require.False(t, st.IsPrefix)
			require.True(t, st.ModTime.After(before), "mod time %v", st.ModTime)
			if !s.opts.ChecksumNotStored {
				require.Equal(t, opts.Checksum, st.Checksum)
				require.Equal(t, opts.Checksum, info.Checksum)
			}
		})
	}
	require.Equal(t, []string{"rt/known-size.jsonl.zst", "rt/unknown-size.jsonl.zst"},
		list(t, b, bucket.ListOptions{}))
}

func (s suite) emptyObject(t *testing.T, b bucket.Bucket) {
	require.NoError(t, b.Put(t.Context(), "empty", strings.NewReader(""), 0, bucket.PutOptions{}))
	require.Empty(t, get(t, b, "empty"))
	st, err := b.Stat(t.Context(), "empty")
	require.NoError(t, err)
	require.Zero(t, st.Size)
}

func (s suite) createOnlyConflict(t *testing.T, b bucket.Bucket) {
	orig := []byte("original content")
	put(t, b, "k/seg", orig)
	tests := []struct {
		name     string
		data     []byte
		checksum string
	}{
		{"other content and checksum", []byte("other content"), sum([]byte("other content"))},
		{"other content without checksum", []byte("other content"), ""},
		{"same content without checksum", orig, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.Put(t.Context(), "k/seg", bytes.NewReader(tt.data), int64(len(tt.data)),
				bucket.PutOptions{Checksum: tt.checksum})
			require.ErrorIs(t, err, bucket.ErrExists)
			require.Equal(t, orig, get(t, b, "k/seg"), "original content must be intact")
		})
	}
	require.Equal(t, []string{"k/seg"}, list(t, b, bucket.ListOptions{}))
}

func (s suite) idempotentRetry(t *testing.T, b bucket.Bucket) {
	data := []byte("segment bytes")
	opts := bucket.PutOptions{Checksum: sum(data)}
	for i := range 3 {
		err := b.Put(t.Context(), "retry/seg", bytes.NewReader(data), int64(len(data)), opts)
		require.NoError(t, err, "attempt %d", i)
	}
	require.Equal(t, data, get(t, b, "retry/seg"))
	require.Equal(t, []string{"retry/seg"}, list(t, b, bucket.ListOptions{}))
}

func (s suite) deleteVisibility(t *testing.T, b bucket.Bucket) {
	put(t, b, "d/one", []byte("1"))
	put(t, b, "d/two", []byte("2"))
	put(t, b, "d/sub/three", []byte("3"))

	require.NoError(t, b.Delete(t.Context(), "d/one"))
	requireAbsent(t, b, "d/one")
	require.NoError(t, b.Delete(t.Context(), "d/sub/three"))
	requireAbsent(t, b, "d/sub/three")
	require.Equal(t, []string{"d/two"}, list(t, b, bucket.ListOptions{}))
	delimited := list(t, b, bucket.ListOptions{Prefix: "d/", Delimited: true})
	if s.opts.StaleEmptyPrefixes {
		delimited = slices.DeleteFunc(delimited, func(k string) bool { return k == "d/sub/" })
	}
	require.Equal(t, []string{"d/two"}, delimited, "a deleted subtree must not leave a common prefix")

	// Deleting what is missing is not an error.
	require.NoError(t, b.Delete(t.Context(), "d/one"))
	require.NoError(t, b.Delete(t.Context(), "never/existed"))
	require.NoError(t, b.Delete(t.Context(), "d"), "a key that is only a prefix")

	// A deleted key can be created again.
	put(t, b, "d/one", []byte("new"))
	require.Equal(t, []byte("new"), get(t, b, "d/one"))
}

func (s suite) invalidKey(t *testing.T, b bucket.Bucket) {
	keys := []string{
		"", "/abs", "trailing/", "a//b", "./a", "a/./b", "../a", "a/../b", "a/..",
		"tab\tkey", "nl\nkey", "nul\x00key", "del\x7fkey", `back\slash`,
		strings.Repeat("k", bucket.MaxKeyLen+1),
	}
	ctx := t.Context()
	for _, key := range keys {
		err := b.Put(ctx, key, strings.NewReader("x"), 1, bucket.PutOptions{})
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "put %q", key)
		_, _, err = b.Get(ctx, key)
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "get %q", key)
		_, err = b.Stat(ctx, key)
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "stat %q", key)
		err = b.Delete(ctx, key)
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "delete %q", key)
	}
	for _, prefix := range []string{"/abs", "a//", "../", "a\x00"} {
		err := b.List(ctx, bucket.ListOptions{Prefix: prefix}, func(bucket.ObjectInfo) error { return nil })
		require.ErrorIs(t, err, bucket.ErrInvalidKey, "list prefix %q", prefix)
	}
	require.Empty(t, list(t, b, bucket.ListOptions{}))
}

func (s suite) largeObject(t *testing.T, b bucket.Bucket) {
	data := make([]byte, 5<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	for _, size := range []int64{int64(len(data)), -1} {
		key := "large/known"
		if size < 0 {
			key = "large/unknown"
		}
		// A non-seekable reader, as a pipe or a compressor would give.
		r := io.MultiReader(bytes.NewReader(data))
		require.NoError(t, b.Put(t.Context(), key, r, size, bucket.PutOptions{Checksum: sum(data)}))
		got := get(t, b, key)
		require.Equal(t, len(data), len(got))
		require.True(t, bytes.Equal(data, got), "content of %s differs", key)
		st, err := b.Stat(t.Context(), key)
		require.NoError(t, err)
		require.Equal(t, int64(len(data)), st.Size)
	}
}

func (s suite) batchDelete(t *testing.T, b bucket.Bucket) {
	put(t, b, "bd/one", []byte("1"))
	put(t, b, "bd/two", []byte("2"))
	put(t, b, "bd/sub/three", []byte("3"))
	require.NoError(t, b.DeleteBatch(t.Context(), []string{"bd/one", "bd/sub/three", "bd/never"}),
		"missing keys are not an error")
	require.Equal(t, []string{"bd/two"}, list(t, b, bucket.ListOptions{}))
	require.NoError(t, b.DeleteBatch(t.Context(), nil))
	require.ErrorIs(t, b.DeleteBatch(t.Context(), []string{"bd/../x"}), bucket.ErrInvalidKey)
	require.ErrorIs(t, b.DeleteBatch(t.Context(), make([]string, bucket.MaxBatchDelete+1)), bucket.ErrInvalidKey)
	require.Equal(t, []string{"bd/two"}, list(t, b, bucket.ListOptions{}), "a refused batch deletes nothing")
}
