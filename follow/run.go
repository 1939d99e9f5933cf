package follow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// ErrStuck is wrapped by Once when files could not be followed to their end
// (Status().Stuck names them and why).
var ErrStuck = errors.New("follow: files are stuck")

// Run follows the root until ctx ends: it watches the root's directories, walks
// the root every Config.RescanInterval, and reads each changed file a batch
// interval after its first change, handing its new complete lines over as one
// segment. A root that does not exist yet is waited for (reported once). When
// ctx ends, Run reads every file once more and hands over what is complete
// (bounded by Config.DrainTimeout), saves its state and returns nil; an error
// only when the state could not be saved.
func (f *Follower) Run(ctx context.Context) error {
	w := f.newWatcher()
	defer w.close()
	rootMissing := false
	rescan := func(delay time.Duration) {
		err := f.rescan(w, delay)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !rootMissing:
			rootMissing = true
			f.emit(Event{Kind: EventError, Message: fmt.Sprintf("%v: waiting for it (Pi creates it with its first session)", err)})
		case err == nil && rootMissing:
			rootMissing = false
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			f.emit(Event{Kind: EventError, Message: fmt.Sprintf("walk %s: %v", f.cfg.Root, err)})
		}
	}
	rescan(0)
	f.lookForLoss(ctx)
	ticker := time.NewTicker(f.cfg.RescanInterval)
	defer ticker.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	missing := f.missingSignal()
	for {
		f.resetTimer(timer)
		select {
		case <-ctx.Done():
			return f.drain(ctx)
		case ev, ok := <-w.events():
			if ok {
				f.onFSEvent(w, ev)
			}
		case err, ok := <-w.errors():
			if ok {
				f.emit(Event{Kind: EventError, Message: fmt.Sprintf("watch: %v: walking %s again", err, f.cfg.Root)})
				if errors.Is(err, fsnotify.ErrEventOverflow) {
					rescan(0)
				}
			}
		case <-missing:
			f.noBucket(ctx, errNoBucketSeen)
		case <-ticker.C:
			rescan(f.cfg.BatchInterval)
			f.lookForLoss(ctx)
		case <-timer.C:
			// Files due within a quarter interval come along: each tick writes
			// the state file twice, whatever the number of files it reads.
			f.tick(ctx, f.dueBy(f.cfg.Now().Add(f.cfg.BatchInterval/4)))
			f.snapshot()
		}
	}
}

// resetTimer sets timer to fire when the first file is due.
func (f *Follower) resetTimer(timer *time.Timer) {
	var next time.Time
	for _, t := range f.files {
		if !t.due.IsZero() && (next.IsZero() || t.due.Before(next)) {
			next = t.due
		}
	}
	if next.IsZero() {
		timer.Stop()
		return
	}
	timer.Reset(max(next.Sub(f.cfg.Now()), 0))
}

// dueBy returns the files due at now, in path order.
func (f *Follower) dueBy(now time.Time) []*tracked {
	var due []*tracked
	for _, t := range f.files {
		if !t.due.IsZero() && !t.due.After(now) {
			due = append(due, t)
		}
	}
	slices.SortFunc(due, func(a, b *tracked) int { return strings.Compare(a.rel, b.rel) })
	return due
}

// drain is Run's end: every file read once more, what is complete handed over
// within Config.DrainTimeout of ctx's end, and the state saved.
func (f *Follower) drain(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.DrainTimeout)
	defer cancel()
	f.once = true
	now := f.cfg.Now()
	for _, t := range f.files {
		t.schedule(now)
	}
	_ = f.pass(dctx)
	f.snapshot()
	if f.dirty {
		return f.save()
	}
	return nil
}

// Once reads every file under the root once, hands over every complete line
// that is not handed over yet, saves the state and returns: for cron jobs and
// tests. It returns an error wrapping fs.ErrNotExist for a root that does not
// exist, one wrapping ErrStuck when a file failed (Status().Stuck), and ctx's
// error when it ended first. The uploader may still be uploading when Once
// returns.
func (f *Follower) Once(ctx context.Context) error {
	f.once = true
	defer func() { f.once = false }()
	if err := f.rescan(nil, 0); err != nil {
		return err
	}
	f.lookForLoss(ctx)
	if f.bucketMissingNow() {
		f.noBucket(ctx, errNoBucketSeen)
	}
	err := f.pass(ctx)
	f.checkStuck(f.cfg.Now())
	f.snapshot()
	if f.dirty {
		if serr := f.save(); serr != nil {
			return errors.Join(err, serr)
		}
	}
	if err != nil {
		return err
	}
	if st := f.Status(); len(st.Stuck) > 0 {
		return fmt.Errorf("%w: %d (%s: %s)", ErrStuck, len(st.Stuck), st.Stuck[0].File, st.Stuck[0].Reason)
	}
	return nil
}

// pass reads every scheduled file, whenever it is due, until none is
// scheduled (a file read in several batches is scheduled again at once).
func (f *Follower) pass(ctx context.Context) error {
	for ctx.Err() == nil {
		var due []*tracked
		for _, t := range f.files {
			if !t.due.IsZero() {
				due = append(due, t)
			}
		}
		if len(due) == 0 {
			return nil
		}
		slices.SortFunc(due, func(a, b *tracked) int { return strings.Compare(a.rel, b.rel) })
		f.tick(ctx, due)
	}
	return ctx.Err()
}
