package follow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
//
// A symbolic link to a directory directly under the root is a session folder
// like a real one, as Pi takes it (Pi lists such folders and reaches their
// files through the link): it is walked and watched through the link, and its
// files are named after the link (the folder name Pi uses). A link is not
// followed when its directory overlaps the root (is the root, an ancestor of
// it, or inside it) or the directory of a link followed before it (links are
// taken in name order), so that no file is followed twice and no walk loops;
// a link to a directory deeper down is not followed either. Such links are
// ignored and reported once, saying why.
func (f *Follower) rescan(w *watcher, delay time.Duration) error {
	now := f.cfg.Now()
	seen := make(map[string]bool, len(f.files))
	if r, err := filepath.EvalSymlinks(f.cfg.Root); err == nil {
		f.walkRoot = r
	}
	root := f.walkRoot
	stateDirs := []string{f.cfg.StateDir}
	if r, err := filepath.EvalSymlinks(f.cfg.StateDir); err == nil && r != f.cfg.StateDir {
		stateDirs = append(stateDirs, r)
	}
	// skip reports whether the walk leaves out the entry at p: hidden, or the
	// state directory.
	skip := func(p string, d fs.DirEntry) bool {
		return strings.HasPrefix(d.Name(), ".") || slices.Contains(stateDirs, p)
	}
	// track notes the file at p (path through the link) as rel; why, when not
	// "", is why it is ignored without being opened.
	track := func(p, rel string, d fs.DirEntry, why string) {
		seen[rel] = true
		t, ok := f.files[rel]
		switch {
		case !ok:
			t = newTracked(f.cfg.Root, rel)
			t.ignoreWhy = why
			f.files[rel] = t
			t.schedule(now)
			return
		case t.ignoreWhy != why:
			t.ignoreWhy = why
			t.schedule(now)
			return
		}
		info, err := d.Info()
		if d.Type()&fs.ModeSymlink != 0 {
			info, err = os.Stat(p) // the linked file's size and time, not the link's
		}
		if err == nil && t.observe(info) {
			f.behind(t, now)
			t.schedule(now.Add(delay))
		}
	}
	// unreadable notes the folder at p (path through the link), which the walk
	// could not list (err), as rel: its files cannot be followed, so it is
	// reported stuck until a walk lists it (then the walk forgets it, as a
	// directory it did not see). A folder gone meanwhile, or a hidden one, is
	// passed over.
	unreadable := func(p, rel string, d fs.DirEntry, err error) {
		if d == nil || !d.IsDir() || errors.Is(err, fs.ErrNotExist) || hidden(rel) || slices.Contains(stateDirs, p) {
			return
		}
		why := fmt.Sprintf("cannot list the folder: %v: its session files are not followed", err)
		seen[rel] = true
		t, ok := f.files[rel]
		if !ok || t.failWhy != why {
			t = newTracked(f.cfg.Root, rel)
			t.failWhy = why
			f.files[rel] = t
			t.schedule(now)
		}
	}
	// linkedDir reports whether the entry at p is a symbolic link to a directory.
	linkedDir := func(p string, d fs.DirEntry) bool {
		if d.Type()&fs.ModeSymlink == 0 {
			return false
		}
		st, err := os.Stat(p)
		return err == nil && st.IsDir()
	}
	var links []string // the links to directories directly under the root, in name order
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			if rel, rerr := filepath.Rel(root, p); rerr == nil {
				unreadable(p, filepath.ToSlash(rel), d, err)
			}
			return nil // gone meanwhile, or unreadable: the next rescan tries again
		}
		if p != root && skip(p, d) {
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
		switch {
		case linkedDir(p, d) && filepath.Dir(p) == root:
			links = append(links, p)
		case linkedDir(p, d):
			track(p, rel, d, errNestedLink)
		default:
			track(p, rel, d, "")
		}
		return nil
	})
	var followed []linked // the links followed
	for _, link := range links {
		name := filepath.Base(link)
		dir, lerr := filepath.EvalSymlinks(link)
		if lerr != nil {
			continue // gone meanwhile: the next rescan tries again
		}
		if why := linkOverlap(dir, root, followed); why != "" {
			if d, err := os.Lstat(link); err == nil {
				track(link, name, fs.FileInfoToDirEntry(d), why)
			}
			continue
		}
		followed = append(followed, linked{name: name, dir: dir})
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			in, rerr := filepath.Rel(dir, p)
			if rerr != nil {
				return nil
			}
			via := filepath.Join(link, in) // the path through the link, as Pi opens it
			if err != nil {
				unreadable(via, strings.TrimSuffix(name+"/"+filepath.ToSlash(in), "/."), d, err)
				return nil // gone meanwhile, or unreadable: the next rescan tries again
			}
			if p != dir && skip(p, d) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				f.watch(w, via)
				return nil
			}
			rel := name + "/" + filepath.ToSlash(in)
			if linkedDir(p, d) {
				track(via, rel, d, errNestedLink)
			} else {
				track(via, rel, d, "")
			}
			return nil
		})
	}
	for rel, t := range f.files {
		if seen[rel] {
			continue
		}
		if st, err := os.Stat(t.path); err == nil && st.IsDir() && t.kind != kindFollowing {
			// A link the walk now follows as a folder, or a file replaced by a
			// directory: nothing to read or report.
			delete(f.files, rel)
			continue
		}
		t.schedule(now)
	}
	f.checkStuck(now)
	f.snapshot()
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("root %s: %w", f.cfg.Root, err)
	}
	return err
}

// errNestedLink is why a symbolic link to a directory below a session folder
// is ignored.
const errNestedLink = "a symbolic link to a directory inside a session folder: only the folders directly under the root are followed through symbolic links"

// linked is a symbolic link to a session folder that the walk follows.
type linked struct {
	name string // the link's name
	dir  string // its directory, resolved
}

// linkOverlap returns why the link to dir (resolved) directly under root
// (resolved) is not followed, "" when it is: dir overlaps the root or the
// directory of a link followed before it.
func linkOverlap(dir, root string, followed []linked) string {
	within := func(a, b string) bool { // a is b or inside it
		return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, string(os.PathSeparator))+string(os.PathSeparator))
	}
	switch {
	case within(root, dir):
		return fmt.Sprintf("a symbolic link to %s, which holds the sessions root: not followed (it would walk the root again)", dir)
	case within(dir, root):
		return fmt.Sprintf("a symbolic link to %s, inside the sessions root: not followed (that folder is followed under its own name)", dir)
	}
	for _, o := range followed {
		if within(dir, o.dir) || within(o.dir, dir) {
			return fmt.Sprintf("a symbolic link to %s, which overlaps %s, the folder of link %s: not followed (a file is followed under one folder: the first link's, by name)", dir, o.dir, o.name)
		}
	}
	return ""
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
		// A new directory, or a link to one (a linked session folder): the
		// rescan decides whether and how it is followed.
		if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
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
