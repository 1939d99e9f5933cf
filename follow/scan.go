package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watcher watches the root's directories (fsnotify is not recursive: each
// directory has a watch of its own, added as the rescan and Create events find
// them). A nil watcher watches nothing: the rescan alone finds changes.
type watcher struct {
	w    *fsnotify.Watcher
	dirs map[string]bool // the watched directories
	// failed: adding a watch failed (reported once); the rescan covers it.
	failed bool
}

// newWatcher starts a watcher, or returns nil when Config.NoWatch is set or
// the system refuses one (reported).
func (f *Follower) newWatcher() *watcher {
	if f.cfg.NoWatch {
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		f.emit(Event{Kind: EventError, Message: fmt.Sprintf("watch %s: %v: changes are found by the rescan every %v", f.cfg.Root, err, f.cfg.RescanInterval)})
		return nil
	}
	return &watcher{w: w, dirs: map[string]bool{}}
}

// events and errors are the watcher's channels (nil, never ready, for none).
func (w *watcher) events() <-chan fsnotify.Event {
	if w == nil {
		return nil
	}
	return w.w.Events
}

func (w *watcher) errors() <-chan error {
	if w == nil {
		return nil
	}
	return w.w.Errors
}

func (w *watcher) close() {
	if w != nil {
		w.w.Close()
	}
}

// add watches dir unless it is watched; a failure is reported once.
func (f *Follower) watch(w *watcher, dir string) {
	if w == nil || w.dirs[dir] {
		return
	}
	if err := w.w.Add(dir); err != nil {
		if !w.failed {
			w.failed = true
			f.emit(Event{Kind: EventError, Message: fmt.Sprintf("watch %s: %v: changes there are found by the rescan every %v", dir, err, f.cfg.RescanInterval)})
		}
		return
	}
	w.dirs[dir] = true
}

// hidden reports whether a path relative to the root has a hidden element.
func hidden(rel string) bool {
	for _, el := range strings.Split(rel, "/") {
		if strings.HasPrefix(el, ".") && el != "." {
			return true
		}
	}
	return false
}

// rescan walks the root: it watches every directory, schedules new files at
// once and changed ones after delay, and schedules the files it did not find
// (their read reports them removed). It reports a root that does not exist.
func (f *Follower) rescan(w *watcher, delay time.Duration) error {
	now := f.cfg.Now()
	seen := make(map[string]bool, len(f.files))
	if r, err := filepath.EvalSymlinks(f.cfg.Root); err == nil {
		f.walkRoot = r
	}
	root := f.walkRoot
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // gone meanwhile, or unreadable: the next rescan tries again
		}
		if p != root && (strings.HasPrefix(d.Name(), ".") || p == f.cfg.StateDir) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			f.watch(w, p)
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		seen[rel] = true
		if t, ok := f.files[rel]; !ok {
			f.files[rel] = newTracked(f.cfg.Root, rel)
			f.files[rel].schedule(now)
		} else if info, err := d.Info(); err == nil && t.observe(info) {
			f.behind(t, now)
			t.schedule(now.Add(delay))
		}
		return nil
	})
	for rel, t := range f.files {
		if !seen[rel] {
			t.schedule(now)
		}
	}
	f.checkStuck(now)
	f.snapshot()
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("root %s: %w", f.cfg.Root, err)
	}
	return err
}

// behind notes that t changed: since when it holds bytes not handed over.
func (f *Follower) behind(t *tracked, now time.Time) {
	if t.behindSince.IsZero() {
		t.behindSince = now
	}
}

// onFSEvent schedules the file of a watch event: a new directory is watched
// and walked (by a rescan), a written or created file is read a batch interval
// later, a removed or renamed one at once.
func (f *Follower) onFSEvent(w *watcher, ev fsnotify.Event) {
	rel, err := filepath.Rel(f.walkRoot, ev.Name)
	if err != nil || !filepath.IsLocal(rel) {
		return
	}
	rel = filepath.ToSlash(rel)
	if hidden(rel) || ev.Name == f.cfg.StateDir || strings.HasPrefix(ev.Name, f.cfg.StateDir+string(os.PathSeparator)) {
		return
	}
	now := f.cfg.Now()
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if w != nil {
			delete(w.dirs, ev.Name)
		}
		if t, ok := f.files[rel]; ok {
			t.schedule(now)
		}
		return
	}
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) {
		return
	}
	if ev.Has(fsnotify.Create) {
		if st, err := os.Lstat(ev.Name); err == nil && st.IsDir() {
			_ = f.rescan(w, f.cfg.BatchInterval)
			return
		}
	}
	t, ok := f.files[rel]
	if !ok {
		t = newTracked(f.cfg.Root, rel)
		f.files[rel] = t
	}
	f.behind(t, now)
	t.schedule(now.Add(f.cfg.BatchInterval))
}

// checkStuck reports the files that have ended in an unterminated line, or
// failed, for Config.StuckAfter.
func (f *Follower) checkStuck(now time.Time) {
	for _, t := range f.files {
		switch {
		case t.kind == kindFollowing && t.tornAt >= 0 && now.Sub(t.tornSince) >= f.cfg.StuckAfter:
			t.stuck = fmt.Sprintf("ends in an unterminated line at offset %d since %s: waiting for its newline",
				t.tornAt, t.tornSince.UTC().Format(time.RFC3339))
			f.warn(t, EventStuck, fmt.Sprintf("torn@%d", t.tornAt), Event{Offset: t.tornAt, Message: t.stuck})
		case !t.failingSince.IsZero() && now.Sub(t.failingSince) >= f.cfg.StuckAfter:
			t.stuck = fmt.Sprintf("failing since %s (%d attempts)", t.failingSince.UTC().Format(time.RFC3339), t.failures)
			f.warn(t, EventStuck, "failing@"+t.failingSince.String(), Event{Offset: t.offset, Message: t.stuck})
		}
	}
}
