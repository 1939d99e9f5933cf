package follow

import (
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

// TestReadPrefix: the checksum, first line, anchor and line end of a file's
// first n bytes, the empty prefix included (a state at offset 0).
func TestReadPrefix(t *testing.T) {
	const file = "head\nsecond line\nthird"
	tests := []struct {
		name    string
		n       int64
		header  string
		anchor  string
		lineEnd bool
	}{
		{"empty", 0, "", "", true},
		{"one byte", 1, "", "h", false},
		{"the first line", 5, "head", "head\n", true},
		{"two lines", 17, "head", "second line\n", true},
		{"in the third line", 20, "head", "thi", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := readPrefix(strings.NewReader(file), tt.n)
			require.NoError(t, err)
			require.Equal(t, xxhash.Sum64String(file[:tt.n]), p.digest.Sum64())
			require.Equal(t, tt.header, string(p.header))
			require.Equal(t, tt.lineEnd, p.lineEnd)
			require.Equal(t, int64(len(tt.anchor)), p.anchor.n)
			require.Equal(t, tt.n-int64(len(tt.anchor)), p.anchor.off)
			if tt.anchor != "" {
				require.Equal(t, xxhash.Sum64String(tt.anchor), p.anchor.sum)
			}
		})
	}
}
