package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadBudget: sessions read at once never take more than the budget
// together, a session larger than the budget is read alone, every read runs,
// and a cancelled wait gives the context's error.
func TestReadBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budget  int64
		weights []int64
	}{
		{"three of four fit", 10, []int64{3, 3, 3, 3, 3, 3, 3, 3}},
		{"one larger than the budget", 10, []int64{25, 1, 1, 2, 40, 3, 1}},
		{"empty sessions", 10, []int64{0, 0, 0, 0}},
		{"each alone", 1, []int64{5, 6, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newReadBudget(tc.budget)
			var mu sync.Mutex
			inUse, running, ran, peak := int64(0), 0, 0, int64(0)
			var wg sync.WaitGroup
			for _, w := range tc.weights {
				wg.Go(func() {
					release, err := b.acquire(context.Background(), w)
					if !assert.NoError(t, err) {
						return
					}
					take := min(max(w, 1), tc.budget)
					mu.Lock()
					inUse += take
					running++
					ran++
					peak = max(peak, inUse)
					assert.LessOrEqual(t, inUse, tc.budget)
					if w >= tc.budget {
						assert.Equal(t, 1, running, "a session as large as the budget is read alone")
					}
					mu.Unlock()
					time.Sleep(time.Millisecond) // let the others try meanwhile
					mu.Lock()
					inUse -= take
					running--
					mu.Unlock()
					release()
				})
			}
			wg.Wait()
			require.Equal(t, len(tc.weights), ran)
			require.Zero(t, inUse)
			require.Positive(t, peak)
		})
	}

	b := newReadBudget(10)
	release, err := b.acquire(context.Background(), 10)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.acquire(ctx, 1)
	require.ErrorIs(t, err, context.Canceled)
	release()
}

// TestLs_ReadBudget: ls lists the same sessions, counts and bytes whatever its
// --read-mib (1 MiB reads these sessions one at a time), and refuses a budget
// under 1 MiB as a usage error.
func TestLs_ReadBudget(t *testing.T) {
	store, _ := storeWithSessions(t, 12)
	want := cli(t, "ls", "--store", store, "--json")
	require.Equal(t, 0, want.code, want.stderr)
	require.Contains(t, want.stdout, "s011")
	for _, mib := range []string{"1", "4096"} {
		got := cli(t, "ls", "--store", store, "--json", "--read-mib", mib, "--parallel", "3")
		require.Equal(t, 0, got.code, got.stderr)
		require.Equal(t, want.stdout, got.stdout, "--read-mib %s", mib)
	}
	bad := cli(t, "ls", "--store", store, "--read-mib", "0")
	require.Equal(t, 2, bad.code)
	require.Contains(t, bad.stderr, "--read-mib must be at least 1")
}
