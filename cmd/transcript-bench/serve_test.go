package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInterleave checks item 11's rounds: the two sides alternate, the side
// that goes first turns every round, and every client's chain goes on from
// where its last round stopped, each entry once.
func TestInterleave(t *testing.T) {
	for _, tc := range []struct {
		n, rounds, clients int
		sizes              []int // appends per client in each round
	}{
		{n: 10, rounds: 5, clients: 1, sizes: []int{2, 2, 2, 2, 2}},
		{n: 7, rounds: 3, clients: 3, sizes: []int{2, 2, 3}},
		{n: 3, rounds: 5, clients: 2, sizes: []int{1, 1, 1}}, // no more rounds than appends
		{n: 4, rounds: 1, clients: 2, sizes: []int{4}},
	} {
		t.Run(fmt.Sprintf("n%d_r%d_c%d", tc.n, tc.rounds, tc.clients), func(t *testing.T) {
			var mu sync.Mutex
			var order []turn          // the sides' turns, in time
			got := map[string][]int{} // side/client → entries appended
			side := func(name string) *load {
				l, err := newLoad(t.Context(), tc.clients, func(_ context.Context, c int) (appender, error) {
					return func(_ context.Context, i int) error {
						mu.Lock()
						defer mu.Unlock()
						if len(order) == 0 || order[len(order)-1].side != name {
							order = append(order, turn{side: name})
						}
						order[len(order)-1].appends++
						k := fmt.Sprintf("%s/%d", name, c)
						got[k] = append(got[k], i)
						return nil
					}, nil
				})
				require.NoError(t, err)
				return l
			}
			a, b := side("a"), side("b")
			require.NoError(t, interleave(t.Context(), tc.n, tc.rounds, a, b))

			// Each round is a turn of each side, of sizes[r] appends per
			// client; a round that starts with the side the last one ended
			// with continues that side's turn.
			var want []turn
			for r, k := range tc.sizes {
				sides := []string{"a", "b"}
				if r%2 == 1 {
					sides = []string{"b", "a"}
				}
				for _, side := range sides {
					if len(want) > 0 && want[len(want)-1].side == side {
						want[len(want)-1].appends += k * tc.clients
						continue
					}
					want = append(want, turn{side: side, appends: k * tc.clients})
				}
			}
			require.Equal(t, want, order, "the sides' turns")
			for _, name := range []string{"a", "b"} {
				for c := range tc.clients {
					chain := got[fmt.Sprintf("%s/%d", name, c)]
					slices.Sort(chain)
					require.Equal(t, seq(tc.n), chain, "%s client %d", name, c)
				}
			}
			require.Len(t, a.lat, tc.n*tc.clients)
			require.Len(t, b.lat, tc.n*tc.clients)
			require.Equal(t, tc.n, a.next)
			require.Positive(t, a.result().rate)
		})
	}
}

// TestInterleave_StopsAtAFailure checks that a failed append ends the load with
// its error, and that no round runs after it.
func TestInterleave_StopsAtAFailure(t *testing.T) {
	boom := errors.New("boom")
	ran := 0
	bad, err := newLoad(t.Context(), 1, func(context.Context, int) (appender, error) {
		return func(_ context.Context, i int) error {
			if i == 3 {
				return boom
			}
			return nil
		}, nil
	})
	require.NoError(t, err)
	other, err := newLoad(t.Context(), 1, func(context.Context, int) (appender, error) {
		return func(context.Context, int) error { ran++; return nil }, nil
	})
	require.NoError(t, err)
	require.ErrorIs(t, interleave(t.Context(), 10, 5, bad, other), boom)
	// Rounds of 2: the other side runs first in the second round, then bad
	// fails at entry 3; no third round follows.
	require.Equal(t, 4, ran, "the other side's appends")
}

// turn is a run of appends of one side of TestInterleave, with no append of
// the other side between them.
type turn struct {
	side    string
	appends int
}

// seq is 0, 1, …, n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
