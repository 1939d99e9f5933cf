package buckettest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// readRange checks bucket.ReadRange, which uses the backend's GetRange when it has
// one: any window of an object, clipped at its end, and ErrNotFound for a missing key.
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := bucket.ReadRange(t.Context(), b, "range/obj", tt.off, tt.n)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
	_, err := bucket.ReadRange(t.Context(), b, "range/missing", 0, 10)
	require.ErrorIs(t, err, bucket.ErrNotFound)
}
