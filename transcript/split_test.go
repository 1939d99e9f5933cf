package transcript_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

func TestSplitBatch(t *testing.T) {
	e := func(n int) []byte { return make([]byte, n) }
	for _, tc := range []struct {
		name  string
		sizes []int
		max   int64
		want  [][]int
	}{
		{"one run", []int{3, 3}, 8, [][]int{{3, 3}}},
		{"exact fit", []int{3, 3, 3}, 8, [][]int{{3, 3}, {3}}},
		{"oversized entry alone", []int{1, 20, 1}, 8, [][]int{{1}, {20}, {1}}},
		{"empty", nil, 8, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in [][]byte
			for _, n := range tc.sizes {
				in = append(in, e(n))
			}
			var got [][]int
			for _, run := range transcript.SplitBatch(in, tc.max) {
				var sizes []int
				for _, x := range run {
					sizes = append(sizes, len(x))
				}
				got = append(got, sizes)
			}
			require.Equal(t, tc.want, got)
		})
	}
}
