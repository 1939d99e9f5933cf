package follow

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// The follower's marker. A Store that is a SessionChecker keeps, for each
// follower, a small object of its own beside the sessions it uploads into
// (transcript.Store.PutFollowerMarker: {namespace}/.followers/{id}), which no
// compaction, retention or delete of sessions touches. The id is random,
// made at the follower's first start and kept in its state file, so two
// followers uploading into one bucket each have their own.
//
// The marker tells the two ways a store can lose sessions apart: a store
// that lost the marker too lost everything the follower handed over (its
// bucket deleted and created again, its prefix emptied), so the follower asks
// about every file, grown or not, and uploads again those whose sessions are
// gone; a store that still holds it lost only sessions deleted on purpose (a
// retention policy, Store.Delete), which are uploaded again only when
// Pi writes to their files again. The follower asks (one HEAD) when it starts,
// every rescan interval, and when a read finds a session lost.
//
// An emptying is no instant: a purge of a big bucket deletes objects for
// minutes, in key order, and .followers sorts before every agent id that
// starts with a letter or a digit (Pi's "--cwd--" folders sort before it). So
// the follower may find its marker gone while the store still holds its
// sessions, find each held, put the marker back, and only then see the purge
// delete them. For lossSettle after a loss, the looks for the marker ask
// about every file again, one rescan interval after the loss, then two, four
// and so on (a few dozen HEADs per file at most, whatever the rescan
// interval); a session found lost meanwhile starts that again. Both times are
// saved in the state file, so that cron runs and restarts carry on. A
// retention run within lossSettle is told apart by its mark: a session found
// held with a retention mark (RetentionChecker) and found gone at a later
// look was deleted by retention, and stays deleted while its file does not
// grow (noteRetention).

// markedIn is the namespace the state file names for the marker: the
// follower's, once the store held the marker there.
func (f *Follower) markedIn() string {
	if !f.marked {
		return ""
	}
	return f.cfg.Namespace
}

// lossSettle is how long after the store lost the follower's marker (or a
// session since) the follower asks about every file again now and then: at
// least minLossSettle, and at least lossSettleRescans rescan intervals.
func (f *Follower) lossSettle() time.Duration {
	return max(minLossSettle, lossSettleRescans*f.cfg.RescanInterval)
}

const (
	minLossSettle     = 10 * time.Minute
	lossSettleRescans = 30
)

// reaudit asks about every file again when the store lost the marker (or a
// session since) within lossSettle and the last time it asked is as long ago
// as that was after the loss (at least a rescan interval); past lossSettle it
// forgets the loss.
func (f *Follower) reaudit() {
	if f.lostAt.IsZero() {
		return
	}
	now := f.cfg.Now()
	switch {
	case !now.Before(f.lostAt.Add(f.lossSettle())):
		f.lostAt, f.auditedAt, f.dirty = time.Time{}, time.Time{}, true
		for _, t := range f.files {
			t.retiring = false
		}
	case !now.Before(f.auditedAt.Add(max(f.cfg.RescanInterval, f.auditedAt.Sub(f.lostAt)))):
		f.auditAll()
		f.auditedAt, f.dirty = now, true
	}
}

// noteRetention asks, while the follower asks about every file again after a
// lost marker, whether the store holds a retention mark of t's session,
// which it found held: a session so marked, found gone at a later look, was
// deleted by retention (whose delete delay outlasts the looks' intervals),
// and is not uploaded again unless its file grows. A store that does not
// answer leaves what was known.
func (f *Follower) noteRetention(ctx context.Context, t *tracked) {
	rc, ok := f.cfg.Store.(RetentionChecker)
	if !ok || f.lostAt.IsZero() {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	marked, err := rc.RetentionMarked(cctx, t.ref)
	if err == nil && marked != t.retiring {
		t.retiring, f.dirty = marked, true
	}
}

// settleAgain starts lossSettle again when the store lost the marker within
// it: a session found lost says the emptying may still be under way.
func (f *Follower) settleAgain() {
	if !f.lostAt.IsZero() && f.cfg.Now().Before(f.lostAt.Add(f.lossSettle())) {
		f.lostAt, f.dirty = f.cfg.Now(), true
	}
}

// newFollowerID returns a new random follower id.
func newFollowerID() string {
	return "f-" + strings.ToLower(rand.Text()[:16])
}

// markerBody is what the follower's marker object holds: enough for an
// operator browsing the bucket to tell whose it is.
func (f *Follower) markerBody() []byte {
	host, _ := os.Hostname()
	body, _ := json.Marshal(struct {
		Follower string `json:"follower"`
		Host     string `json:"host,omitempty"`
		Root     string `json:"root"`
		Marked   string `json:"marked"`
	}{f.id, host, f.cfg.Root, f.cfg.Now().UTC().Format("2006-01-02T15:04:05Z")})
	return body
}

// lookForLoss asks a Store that is a SessionChecker whether it still holds the
// follower's marker. It puts the marker when the store never held it (the
// follower's first start on this store); when the store held it before and no
// longer does, every followed file whose lines were handed over is audited
// (its next read asks whether the store holds its session) and the audits
// are saved in the state file before the marker is put back, so that a crash
// in between does not forget them, and so is the loss's time, after which
// the looks ask about every file again now and then (reaudit). A store that does not answer
// is not asked again for a rescan interval.
func (f *Follower) lookForLoss(ctx context.Context) {
	c, ok := f.cfg.Store.(SessionChecker)
	if !ok || f.cfg.Now().Before(f.storeQuietUntil) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	has, err := c.MarkerExists(cctx, f.cfg.Namespace, f.id)
	if f.bucketGone(ctx, err) {
		return // looked for again at the next rescan
	}
	wasMissing := f.bucketMissing
	if err == nil && wasMissing {
		f.bucketBack()
	}
	if err == nil && has {
		if !f.marked {
			f.marked, f.dirty = true, true
		}
		f.reaudit()
		return
	}
	if err == nil && f.marked {
		f.lostAt, f.auditedAt = f.cfg.Now(), f.cfg.Now()
		n := f.auditAll()
		if !wasMissing { // else reported when the bucket went
			f.emit(Event{Kind: EventLost, Message: fmt.Sprintf("the store no longer holds this follower's marker %s "+
				"(its bucket or prefix emptied?): asking whether it still holds the session of each of the %d files handed over, "+
				"and uploading again those it lost", f.id, n)})
		}
		if err = f.save(); err != nil {
			err = fmt.Errorf("write the state file: %w", err)
		}
	}
	if err == nil {
		err = c.PutMarker(cctx, f.cfg.Namespace, f.id, f.markerBody())
	}
	if f.bucketGone(ctx, err) {
		return
	}
	if err != nil {
		f.storeQuietUntil = f.cfg.Now().Add(f.cfg.RescanInterval)
		f.emit(Event{Kind: EventError, Message: fmt.Sprintf("look for this follower's marker %s in the store: %v (asked again in %s)",
			f.id, err, f.cfg.RescanInterval)})
		return
	}
	f.marked, f.dirty = true, true
}
