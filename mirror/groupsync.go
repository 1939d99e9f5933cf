package mirror

import (
	"sync"

	"github.com/transcriptstore/transcript/internal/fsutil"
)

// dirSyncer fsyncs directories with group commit: callers that need a directory
// synced after their change share one fsync that starts after the change, instead
// of each running its own. While one fsync of a directory runs, every caller that
// arrives waits for the next one, which then covers all of them.
type dirSyncer struct {
	mu   sync.Mutex
	dirs map[string]*dirSync
	// sync is the fsync of one directory (fsutil.SyncDir; replaced in tests).
	sync func(dir string) error
}

// dirSync is the group-commit state of one directory.
type dirSync struct {
	cond      *sync.Cond
	started   uint64 // fsyncs started
	completed uint64 // fsyncs completed
	running   bool
	err       error // result of the last completed fsync
	waiters   int   // callers holding a reference (the entry is dropped at 0)
}

func newDirSyncer() *dirSyncer {
	return &dirSyncer{dirs: map[string]*dirSync{}, sync: fsutil.SyncDir}
}

// syncDir returns once an fsync of dir that started after the call has completed,
// with that fsync's error.
func (s *dirSyncer) syncDir(dir string) error {
	s.mu.Lock()
	d := s.dirs[dir]
	if d == nil {
		d = &dirSync{cond: sync.NewCond(&s.mu)}
		s.dirs[dir] = d
	}
	d.waiters++
	// A running fsync may have started before the caller's change: the caller
	// needs the next one.
	ticket := d.started + 1
	for d.completed < ticket {
		if d.running {
			d.cond.Wait()
			continue
		}
		d.running = true
		d.started++
		n := d.started
		s.mu.Unlock()
		err := s.sync(dir)
		s.mu.Lock()
		d.running, d.completed, d.err = false, n, err
		d.cond.Broadcast()
	}
	err := d.err
	d.waiters--
	if d.waiters == 0 && !d.running {
		delete(s.dirs, dir)
	}
	s.mu.Unlock()
	return err
}
