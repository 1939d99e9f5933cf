package mirror

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"time"
)

// work is one upload worker: it takes segments from the queue until Close stops it.
func (m *Mirror) work() {
	defer m.workers.Done()
	for m.ctx.Err() == nil {
		j, data := m.pop()
		if j == nil {
			select {
			case <-m.wake:
				continue
			case <-m.ctx.Done():
				return
			}
		}
		m.upload(j, data)
	}
}

// pop takes the oldest queued segment of a session that has none in flight, or
// returns nil when there is none. It passes a wake-up on when more remain, so idle
// workers join in.
//
// A session's segments are uploaded one at a time, in the order they were
// accepted (for the outbox of an earlier process: in key order, which is creation
// order): a later flush's entries name earlier ones as parents, and a reader must
// never find an entry in the bucket whose parent is not there yet, as it would if
// a retried segment were overtaken by the next one.
func (m *Mirror) pop() (*job, []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := 0; i < len(m.queue); i++ {
		j := m.queue[i]
		if m.busy[j.session] {
			continue
		}
		if m.heldBackLocked(j) {
			// Behind a quarantined segment of its session: uploading it would
			// put entries in the bucket whose parents are not there.
			m.queue = slices.Delete(m.queue, i, i+1)
			i--
			m.holdBackLocked(j)
			continue
		}
		m.busy[j.session] = true
		m.queue = slices.Delete(m.queue, i, i+1)
		if len(m.queue) > 0 {
			m.signal()
		}
		return j, j.data
	}
	return nil, nil
}

// signal wakes one idle worker, if none has a wake-up pending already.
func (m *Mirror) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// upload stores one segment, retrying transient failures with backoff until it
// succeeds, the store rejects it for good, DropQueued takes it back, or Close
// stops the worker (the segment then stays in the outbox and stays pending).
func (m *Mirror) upload(j *job, data []byte) {
	log := m.cfg.Logger.With("key", j.key)
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	if !m.flying(j, cancel) {
		m.takenBack(j, log)
		return
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			m.countRetry()
			if !sleep(ctx, backoff(attempt-1, m.cfg.MinBackoff, m.cfg.MaxBackoff)) {
				if m.ctx.Err() == nil {
					m.takenBack(j, log)
				}
				return
			}
		}
		var err error
		if data == nil {
			data, err = m.box.read(j.key)
			if errors.Is(err, fs.ErrNotExist) {
				// Someone removed the file: nothing is left to upload or to keep.
				log.Error("mirror: outbox segment vanished before upload")
				err = fmt.Errorf("%w: %s: %w", ErrLost, j.key, err)
				m.countFailure(err)
				m.done(j, err)
				return
			}
		}
		if err == nil {
			rctx, rcancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
			err = m.cfg.Store.PutSegment(rctx, j.key, data)
			rcancel()
		}
		if err == nil && j.jf == nil { // a journal record is released by done
			if rerr := m.box.remove(j.key); rerr != nil {
				// The segment is stored; a leftover file is uploaded again at the
				// next start, harmlessly.
				log.Warn("mirror: remove uploaded segment from outbox", "err", rerr)
			}
		}
		if err == nil {
			m.countUpload(j.size)
			m.done(j, nil)
			return
		}
		if m.ctx.Err() != nil {
			return // stopped by Close; the segment stays in the outbox
		}
		if m.dropping(j) {
			m.takenBack(j, log)
			return
		}
		m.countFailure(err)
		if permanent(err) {
			log.Error("mirror: store rejected segment; moving it to quarantine; its session is stuck until released", "err", err)
			m.quarantineJob(j, data, err)
			m.done(j, fmt.Errorf("%w: %w", ErrQuarantined, err))
			return
		}
		log.Warn("mirror: upload failed; will retry", "attempt", attempt+1, "err", err)
	}
}

// flying records cancel as the end of j's upload, for DropQueued, and
// reports whether j is still to be uploaded (false: taken back already).
func (m *Mirror) flying(j *job, cancel context.CancelFunc) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	j.cancel = cancel
	return !j.drop
}

// dropping reports whether DropQueued takes j back.
func (m *Mirror) dropping(j *job) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return j.drop
}

// takenBack ends the upload of j, which DropQueued took back before the
// store had it: it leaves the outbox as if uploaded.
func (m *Mirror) takenBack(j *job, log *slog.Logger) {
	if j.jf == nil { // a journal record is released by done
		if err := m.box.remove(j.key); err != nil {
			log.Warn("mirror: remove a segment taken back from the outbox", "err", err)
		}
	}
	m.mu.Lock()
	j.dropped = true
	m.mu.Unlock()
	m.done(j, nil)
}

// done marks j as no longer pending; err is non-nil when it failed for good. The
// next segment of its session may go now.
func (m *Mirror) done(j *job, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j.err = err
	if errors.Is(err, ErrLost) {
		m.lost[j] = struct{}{}
	}
	m.finishLocked(j)
	delete(m.busy, j.session)
	if len(m.queue) > 0 {
		m.signal()
	}
}

// sleep waits d or until ctx ends; it reports whether the whole wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
