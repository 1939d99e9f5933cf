package follow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/segment"
)

// Follower uploads the session files under a root as Pi writes them. Create it
// with New, run it with Run (until its context ends) or Once, and Close it.
// Run and Once must not run at the same time; Status and Collector are safe
// for concurrent use.
type Follower struct {
	cfg      Config
	rootBase string // the root's own name (the agent of files directly in it)
	// walkRoot is the root with symbolic links resolved, as the walk and the
	// watch name its files (the root until it exists).
	walkRoot string
	lock     *os.File
	// files are the files under the root, by path relative to it (slash-
	// separated). Only the goroutine running Run or Once touches them.
	files map[string]*tracked
	// dirty: the state file lags behind files.
	dirty bool
	// once: failures are not retried (Once, and Run's last pass).
	once bool
	// maxEntry is the longest line handed over (the store's entry limit,
	// segment.DefaultMaxEntrySize; tests make it smaller): a longer one is
	// skipped and reported.
	maxEntry int64
	// storeQuietUntil: the store failed to say whether it holds a session
	// (checkHeld) or the follower's marker (lookForLoss); it is not asked
	// again before then.
	storeQuietUntil time.Time
	// id names the follower's marker in the store; marked: the store held the
	// marker when last asked (marker.go).
	id     string
	marked bool
	// place is where the follower's state lives (identity.go).
	place place
	// lostAt: when the store lost the marker lately (an emptying may still
	// be under way), or last found a session lost since; auditedAt: when
	// the follower last asked about every file since (marker.go).
	lostAt, auditedAt time.Time
	// bucketMissing: the store's bucket does not exist (nobucket.go).
	bucketMissing bool

	mu    sync.Mutex
	stats stats
}

// New validates cfg, locks cfg.StateDir and reads the follower's state: each
// file it names is read again from its start up to the offset recorded, and
// its checksum compared, so that a file changed while no follower ran is
// reconciled against the store instead of being trusted. A state file that
// cannot be read is moved aside (reported by an EventError) and every file is
// reconciled. The caller must Close the Follower.
func New(cfg Config) (*Follower, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	lock, err := fsutil.LockFile(filepath.Join(cfg.StateDir, LockFileName))
	if err != nil {
		return nil, fmt.Errorf("follow: state directory %s: %w", cfg.StateDir, err)
	}
	f := &Follower{cfg: cfg, rootBase: filepath.Base(cfg.Root), walkRoot: cfg.Root, lock: lock, files: map[string]*tracked{},
		maxEntry: segment.DefaultMaxEntrySize, place: placeOf(cfg)}
	if err := f.resume(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("follow: %w", err)
	}
	return f, nil
}

// Close releases the state directory. It does not wait for anything: Run and
// Once have saved the state when they return.
func (f *Follower) Close() error {
	return f.lock.Close()
}

// statePath is the state file's path.
func (f *Follower) statePath() string { return filepath.Join(f.cfg.StateDir, StateFileName) }

// emit stamps ev and hands it to Config.OnEvent.
func (f *Follower) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = f.cfg.Now()
	}
	if f.cfg.OnEvent != nil {
		f.cfg.OnEvent(ev)
	}
}

// warn emits an event of kind about t unless one with key was reported for t
// before.
func (f *Follower) warn(t *tracked, kind EventKind, key string, ev Event) {
	key = string(kind) + ":" + key
	if t.reported[key] {
		return
	}
	t.reported[key] = true
	ev.Kind, ev.File, ev.Session = kind, t.rel, t.ref
	f.emit(ev)
}

// removed forgets a file that is gone; the bucket keeps what was uploaded.
func (f *Follower) removed(t *tracked) {
	delete(f.files, t.rel)
	f.dirty = true
	if t.kind == kindFollowing {
		f.emit(Event{Kind: EventRemoved, File: t.rel, Session: t.ref, Offset: t.offset,
			Message: fmt.Sprintf("removed locally; the bucket keeps session %s", t.ref)})
	}
}

// tick reads the files of due and hands their new lines over: it records an
// intent for every batch in the state file, hands the batches over (Parallel
// at a time), and records the new offsets.
func (f *Follower) tick(ctx context.Context, due []*tracked) {
	var batches, uploads []*batch
	for _, t := range due {
		t.due = time.Time{}
		b, err := f.read(ctx, t)
		if err != nil {
			f.failed(t, err)
			continue
		}
		if b == nil {
			f.settled(t)
			continue
		}
		batches = append(batches, b)
		if len(b.entries) > 0 {
			uploads = append(uploads, b)
		}
	}
	if len(uploads) > 0 {
		prev := make([]int64, len(uploads))
		for i, b := range uploads {
			prev[i], b.t.uploading = b.t.uploading, b.to
		}
		if err := f.save(); err != nil {
			for i, b := range uploads {
				b.t.uploading = prev[i]
				b.err = fmt.Errorf("record the intent to upload: %w", err)
			}
		} else {
			f.handOver(ctx, uploads)
		}
	}
	for _, b := range batches {
		if b.err != nil {
			f.failed(b.t, b.err)
			continue
		}
		f.commit(b)
	}
	if f.dirty {
		if err := f.save(); err != nil {
			f.emit(Event{Kind: EventError, Message: fmt.Sprintf("write the state file: %v (the next write retries; a restart reconciles)", err)})
		}
	}
}

// handOver uploads the batches, Parallel at a time, and sets each one's err.
func (f *Follower) handOver(ctx context.Context, uploads []*batch) {
	var g errgroup.Group
	g.SetLimit(f.cfg.Parallel)
	parsed, _ := f.cfg.Uploader.(ParsedUploader)
	for _, b := range uploads {
		g.Go(func() error {
			if parsed != nil {
				b.err = parsed.UploadParsed(ctx, b.t.ref, b.entries, b.links)
			} else {
				b.err = f.cfg.Uploader.Upload(ctx, b.t.ref, b.entries)
			}
			return nil
		})
	}
	_ = g.Wait()
}

// commit moves a file's offset past a batch handed over (or holding nothing to
// hand over) and reports it.
func (f *Follower) commit(b *batch) {
	t := b.t
	t.offset, t.digest, t.anchor, t.uploading = b.to, b.digest, b.anchor, 0
	if !b.more && t.held != nil {
		t.held = nil // the reconcile reached the file's last complete line
	}
	f.dirty = true
	if b.more {
		t.schedule(f.cfg.Now()) // the rest of the file, at once
	}
	f.settled(t)
	f.count(b)
	if b.lines > 0 {
		f.emit(Event{Kind: EventUploaded, File: t.rel, Session: t.ref, Lines: b.lines, Entries: len(b.entries),
			Stored: b.stored, Bytes: b.bytes, Offset: t.offset})
	}
}

// settled clears a file's failures after a read that worked, and its lag when
// it is read to its end.
func (f *Follower) settled(t *tracked) {
	t.failures, t.failingSince = 0, time.Time{}
	if t.kind == kindFollowing && t.stuck != "" && t.tornAt < 0 {
		t.stuck = ""
	}
	if t.kind != kindFollowing || t.offset >= t.seenSize {
		t.behindSince = time.Time{}
	}
}

// failed records a failed read or hand-over of t: its next hand-over
// reconciles (a batch split into several segments may be partly accepted), and
// it is retried after a backoff (1 s, doubling up to a minute), except in a
// last pass.
func (f *Follower) failed(t *tracked, err error) {
	f.countError()
	if t.kind == kindFollowing {
		t.reconcile = true
	}
	now := f.cfg.Now()
	if t.failingSince.IsZero() {
		t.failingSince = now
	}
	t.failures++
	f.emit(Event{Kind: EventError, File: t.rel, Session: t.ref, Offset: t.offset, Message: err.Error()})
	if f.once {
		t.stuck = err.Error()
		return
	}
	t.schedule(now.Add(min(time.Second<<min(t.failures-1, 6), time.Minute)))
}

// save writes the state file.
func (f *Follower) save() error {
	doc := &stateDoc{Format: stateFormat, Root: f.cfg.Root, Follower: f.id, Host: f.place.Host, Machine: f.place.ID, StateDir: f.place.stateDir,
		Marked: f.marked, MarkedIn: f.markedIn(), LostAt: f.lostAt, AuditedAt: f.auditedAt, NoBucket: f.bucketMissing,
		Files: make(map[string]*fileState, len(f.files))}
	for rel, t := range f.files {
		if t.kind != kindFollowing || (t.offset == 0 && t.uploading == 0) {
			continue
		}
		doc.Files[rel] = &fileState{Namespace: t.ref.Namespace, Agent: t.ref.AgentID, Session: t.ref.SessionID,
			Inode: t.ino, Offset: t.offset, Sum: fmt.Sprintf("%016x", t.digest.Sum64()), Uploading: t.uploading,
			Reconcile: t.reconcile || t.held != nil || t.unsure, Audit: t.audit, Retiring: t.retiring}
	}
	if err := writeState(f.statePath(), doc, f.cfg.NoSync); err != nil {
		return err
	}
	f.dirty = false
	return nil
}
