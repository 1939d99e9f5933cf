package transcript

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMinHeap pushes and pops values in random interleavings, duplicates
// included, and checks every pop against the smallest value held.
func TestMinHeap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 31))
		var h minHeap[int32]
		var held []int32
		for range 400 {
			if len(held) == 0 || rng.IntN(3) > 0 {
				v := rng.Int32N(64)
				h.push(v)
				held = append(held, v)
				continue
			}
			lo := slices.Min(held)
			require.Equal(t, lo, h.pop(), "seed %d", seed)
			held = slices.Delete(held, slices.Index(held, lo), slices.Index(held, lo)+1)
			require.Equal(t, len(held), h.Len())
		}
		for len(held) > 0 {
			lo := slices.Min(held)
			require.Equal(t, lo, h.pop(), "seed %d", seed)
			held = slices.Delete(held, slices.Index(held, lo), slices.Index(held, lo)+1)
		}
		require.Zero(t, h.Len())
	}
}
