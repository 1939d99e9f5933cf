package follow

import (
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// A deleted bucket. A store whose bucket is gone (bucket.ErrNoBucket: deleted,
// to be created again by an operator, or purged with it) lost everything the
// follower handed over, marker and sessions, as an emptied store did; but the
// outbox still holds lines handed over before, and retries them until the
// bucket is back, when they would land in the new empty bucket ahead of the
// refill's header, for good (readers keep the earliest stored copy of an
// entry). So the follower does not wait for its next look for the marker: as
// soon as the uploader (BucketWatcher) or one of its own requests finds the
// bucket missing, it takes every followed file back to its start (the state
// file first, so that a crash reconciles them whole), takes back from the
// uploader the lines it holds of their sessions (QueueDropper), and reports
// one EventLost. While the bucket is missing, no file is read (Pi's files keep
// what it writes), and the marker is looked for once a rescan interval; once
// the store answers again, every file is reconciled against it, which
// uploads each whole, header first, into the bucket created again.

// bucketGone reports whether err says that the store's bucket does not exist;
// if so, the follower takes that in (noBucket).
func (f *Follower) bucketGone(ctx context.Context, err error) bool {
	if !errors.Is(err, bucket.ErrNoBucket) {
		return false
	}
	f.noBucket(ctx, err)
	return true
}

// waitBucket reports whether the store's bucket is missing: err (from a
// request to the store) says so, or the follower found so before.
func (f *Follower) waitBucket(ctx context.Context, err error) bool {
	return f.bucketGone(ctx, err) || f.bucketMissing
}

// unlessNoBucket returns err, or nil when the store's bucket is missing: the
// files wait for it, no failure is retried meanwhile.
func (f *Follower) unlessNoBucket(err error) error {
	if f.bucketMissing {
		return nil
	}
	return err
}

// noBucket takes in that the store's bucket does not exist (see above): once
// per absence.
func (f *Follower) noBucket(ctx context.Context, cause error) {
	if f.bucketMissing {
		return
	}
	f.bucketMissing = true
	refs := map[transcript.TranscriptRef]bool{}
	n := 0
	for _, t := range f.files {
		if t.kind != kindFollowing {
			continue
		}
		if t.offset > 0 || t.uploading > 0 {
			refs[t.ref] = true
			n++
		}
		t.offset, t.anchor, t.uploading = 0, span{}, 0
		t.digest.Reset()
		t.held, t.reconcile, t.unsure, t.audit = nil, true, false, false
	}
	now := f.cfg.Now()
	f.lostAt, f.auditedAt, f.dirty = now, now, true
	taken := "no file has lines handed over to the uploader"
	if n > 0 {
		files := "files"
		if n == 1 {
			files = "file"
		}
		taken = fmt.Sprintf("taking back the lines of the %d %s handed over that wait in the uploader", n, files)
	}
	f.emit(Event{Kind: EventLost, Message: fmt.Sprintf("the store's bucket does not exist (deleted?): %v: "+
		"%s; every file is uploaded again whole, header first, once the bucket is back (looked for every %s)",
		cause, taken, f.cfg.RescanInterval)})
	if err := f.save(); err != nil {
		f.emit(Event{Kind: EventError, Message: fmt.Sprintf("write the state file: %v: the lines the uploader holds stay there, ahead of the refills", err)})
		return
	}
	d, ok := f.cfg.Uploader.(QueueDropper)
	if !ok {
		return
	}
	for ref := range refs {
		cctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
		if _, err := d.DropQueued(cctx, ref); err != nil {
			f.emit(Event{Kind: EventError, Session: ref,
				Message: fmt.Sprintf("take back the lines the uploader holds of session %s: %v", ref, err)})
		}
		cancel()
	}
}

// bucketBack takes in that the store answered again after its bucket was
// missing: every followed file is read at once, and reconciled.
func (f *Follower) bucketBack() {
	f.bucketMissing = false
	now := f.cfg.Now()
	for _, t := range f.files {
		if t.kind == kindFollowing {
			t.schedule(now)
		}
	}
}

// bucketMissingNow reports whether the uploader said, since last asked, that
// its uploads found the store's bucket missing.
func (f *Follower) bucketMissingNow() bool {
	w, ok := f.cfg.Uploader.(BucketWatcher)
	if !ok {
		return false
	}
	select {
	case <-w.BucketMissing():
		return true
	default:
		return false
	}
}

// missingSignal is the uploader's channel that says its uploads found the
// store's bucket missing (nil, which never receives, for an uploader that
// does not tell).
func (f *Follower) missingSignal() <-chan struct{} {
	if w, ok := f.cfg.Uploader.(BucketWatcher); ok {
		return w.BucketMissing()
	}
	return nil
}

// errNoBucketSeen is the cause noBucket reports when the uploader said so.
var errNoBucketSeen = fmt.Errorf("the uploader's uploads found it missing: %w", bucket.ErrNoBucket)
