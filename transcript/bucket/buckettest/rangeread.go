package buckettest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// readRange checks GetRange: any window of an object, clipped at its end, nothing
// past the end, ErrNotFound for a missing key and ErrInvalidRange for a negative
// offset or length.
func (s suite) readRange(t *testing.T, b bucket.Bucket) {
	data := []byte("0123456789abcdef")
	require.NoError(t, b.Put(t.Context(), "range/obj", bytes.NewReader(data), int64(len(data)), bucket.PutOptions{Checksum: sum(data)}))
	tests := []struct {
		name   string
		off, n int64
		want   string
	}{
		{"prefix", 0, 4, "0123"},
		{"middle", 5, 3, "567"},
		{"clipped at the end", 10, 100, "abcdef"},
		{"whole", 0, int64(len(data)), string(data)},
		{"empty", 3, 0, ""},
		{"last byte", int64(len(data)) - 1, 1, "f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := b.GetRange(t.Context(), "range/obj", tt.off, tt.n)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
	_, err := b.GetRange(t.Context(), "range/missing", 0, 10)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	for _, r := range [][2]int64{{-1, 4}, {0, -1}} {
		_, err := b.GetRange(t.Context(), "range/obj", r[0], r[1])
		require.ErrorIs(t, err, bucket.ErrInvalidRange, "offset %d, length %d", r[0], r[1])
	}
	_, err = b.GetRange(t.Context(), "../range", 0, 1)
	require.ErrorIs(t, err, bucket.ErrInvalidKey)
}

// readRangePastEnd: a window that starts at or after the end of the object is
// empty, not an error (an S3 server answers 416; the backend maps it).
func (s suite) readRangePastEnd(t *testing.T, b bucket.Bucket) {
	data := []byte("0123456789")
	put(t, b, "range/obj", data)
	for _, off := range []int64{int64(len(data)), int64(len(data)) + 5} {
		got, err := b.GetRange(t.Context(), "range/obj", off, 4)
		require.NoError(t, err, "offset %d", off)
		require.Empty(t, got, "offset %d", off)
	}
	put(t, b, "range/empty", nil)
	got, err := b.GetRange(t.Context(), "range/empty", 0, 4)
	require.NoError(t, err)
	require.Empty(t, got)
}
