package mirror

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

func TestBackoff_Bounds(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 30 * time.Second
	for n := range 200 {
		ceil := hi
		if n < 20 && lo<<n < hi {
			ceil = lo << n
		}
		for range 20 {
			d := backoff(n, lo, hi)
			require.GreaterOrEqual(t, d, time.Duration(0), "retry %d", n)
			require.Less(t, d, ceil, "retry %d", n)
		}
	}
	require.Zero(t, backoff(3, 0, 0))
}

func TestPermanent(t *testing.T) {
	for _, err := range []error{bucket.ErrExists, bucket.ErrInvalidKey, transcript.ErrNotSegmentKey, transcript.ErrInvalidRef} {
		require.True(t, permanent(fmt.Errorf("put: %w", err)), "%v", err)
	}
	for _, err := range []error{errors.New("connection reset"), bucket.ErrNotFound, fmt.Errorf("x: %w", errors.ErrUnsupported)} {
		require.False(t, permanent(err), "%v", err)
	}
}
