package mirror

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Callers that arrive while an fsync of their directory runs share the next one,
// and each gets the result of an fsync that started after it called.
func TestDirSyncer_GroupCommit(t *testing.T) {
	errSecond := errors.New("second fsync failed")
	tests := []struct {
		name    string
		callers int
		second  error
	}{
		{"one waiter", 1, nil},
		{"many waiters share one fsync", 16, nil},
		{"the shared fsync's error reaches every waiter", 8, errSecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newDirSyncer()
			release := make(chan struct{})
			var mu sync.Mutex
			calls := 0
			s.sync = func(dir string) error {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				if n == 1 {
					<-release // the first fsync runs until the others wait
					return nil
				}
				return tt.second
			}
			first := make(chan error, 1)
			go func() { first <- s.syncDir("d") }()
			waitFor(t, s, "d", 1, true)
			errs := make(chan error, tt.callers)
			for range tt.callers {
				go func() { errs <- s.syncDir("d") }()
			}
			waitFor(t, s, "d", tt.callers+1, true)
			close(release)
			require.NoError(t, <-first)
			for range tt.callers {
				require.Equal(t, tt.second, <-errs)
			}
			require.Equal(t, 2, calls, "the waiters shared one fsync")
			require.Empty(t, s.dirs, "no state is kept for idle directories")
		})
	}
}

// waitFor waits until dir has n callers and, if running, an fsync in progress.
func waitFor(t *testing.T, s *dirSyncer, dir string, n int, running bool) {
	t.Helper()
	for {
		s.mu.Lock()
		d := s.dirs[dir]
		ok := d != nil && d.waiters == n && d.running == running
		s.mu.Unlock()
		if ok {
			return
		}
		runtime.Gosched()
	}
}
