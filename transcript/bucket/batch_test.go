package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// batchRecorder records the sizes of the DeleteBatch calls it gets, failing the
// call numbered failAt (from 1; 0 never).
type batchRecorder struct {
	sizes  []int
	failAt int
}

func (r *batchRecorder) DeleteBatch(_ context.Context, keys []string) error {
	r.sizes = append(r.sizes, len(keys))
	if len(r.sizes) == r.failAt {
		return errors.New("refused")
	}
	return nil
}

func TestDeleteInBatches(t *testing.T) {
	tests := []struct {
		keys, failAt int
		want         []int
		wantErr      bool
	}{
		{keys: 0},
		{keys: 1, want: []int{1}},
		{keys: bucket.MaxBatchDelete, want: []int{bucket.MaxBatchDelete}},
		{keys: 2*bucket.MaxBatchDelete + 500, want: []int{bucket.MaxBatchDelete, bucket.MaxBatchDelete, 500}},
		{keys: 2*bucket.MaxBatchDelete + 500, failAt: 2, want: []int{bucket.MaxBatchDelete, bucket.MaxBatchDelete}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d keys, fail at %d", tt.keys, tt.failAt), func(t *testing.T) {
			keys := make([]string, tt.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("k/%d", i)
			}
			r := &batchRecorder{failAt: tt.failAt}
			err := bucket.DeleteInBatches(t.Context(), r, keys)
			require.Equal(t, tt.wantErr, err != nil)
			require.Equal(t, tt.want, r.sizes)
		})
	}
}
