package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// Upload encodes b.Entries as one segment of b.Ref (taking b.Links, when set, as
// what a parse of each entry would read), appends it durably to the
// outbox journal and enqueues it for upload; it returns once the record is durable
// (concurrent Uploads share one fsync), without waiting on the store. A batch
// without entries is a no-op. Upload does not keep b.Entries after it returns; the
// caller must not modify them while it runs.
//
// When the outbox holds Config.MaxPending segments or Config.MaxPendingBytes bytes,
// Upload returns an error wrapping ErrBackpressure, or with Config.BlockWhenFull waits
// until there is room or ctx ends. After Close it returns ErrClosed. On any error the
// batch was not accepted.
func (m *Mirror) Upload(ctx context.Context, b sessiontree.Batch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mirror upload: %w", err)
	}
	if m.isClosed() {
		return fmt.Errorf("mirror upload: %w", ErrClosed)
	}
	if len(b.Entries) == 0 {
		return nil
	}
	// The journal learns of this Upload's appends before the encoding, so that
	// a concurrent Upload about to fsync waits for them (see journal.expect):
	// one segment until prepare says how many, each counted off as it is
	// appended; what is left when Upload returns was never appended.
	m.journal.expect(1)
	announced := 1
	defer func() {
		if announced > 0 {
			m.journal.unexpect(announced)
		}
	}()
	if !m.cfg.BlockWhenFull {
		// Refuse early, before spending time on encoding.
		if err := m.full(1, 0); err != nil {
			return fmt.Errorf("mirror upload %s: %w", b.Ref, err)
		}
	}
	objs, err := m.prepare(b)
	if err != nil {
		if permanentBatch(err) {
			m.refuseBatch(b.Ref, len(b.Entries), err)
			return fmt.Errorf("mirror upload %s: %w: %w", b.Ref, ErrStuck, err)
		}
		return fmt.Errorf("mirror upload %s: %w", b.Ref, err)
	}
	if n := len(objs); n != announced {
		m.journal.expect(n - announced)
		announced = n
	}
	// A batch larger than a segment holds becomes several, uploaded in order.
	// The bounds take them all or none, so that a refusal accepts nothing of a
	// batch the caller hands over again whole. Only a journal write that fails
	// midway leaves the segments before it accepted: readers collapse their
	// identical copies.
	jobs, err := m.reserve(ctx, objs)
	if err != nil {
		return fmt.Errorf("mirror upload %s: %w", b.Ref, err)
	}
	for i, j := range jobs {
		announced-- // appendAnnounced counts it off, written or not
		if err := m.accept(j); err != nil {
			for _, j := range jobs[i+1:] {
				m.release(j)
				m.uploads.Done()
			}
			return fmt.Errorf("mirror upload %s: %w", b.Ref, err)
		}
	}
	m.acceptedBatch(b.Ref)
	return nil
}

// prepare validates and encodes b as one or more level-0 segments. The links a
// tree read of its entries when it appended them (b.Links) are taken instead
// of a second parse of each entry; a batch without them, or with a number that
// does not match its entries, is parsed.
func (m *Mirror) prepare(b sessiontree.Batch) ([]transcript.SegmentObject, error) {
	if b.Links != nil && len(b.Links) == len(b.Entries) {
		return m.cfg.Store.PrepareParsed(b.Ref, b.Entries, b.Links, m.cfg.Writer)
	}
	return m.cfg.Store.PrepareSegments(b.Ref, b.Entries, m.cfg.Writer)
}

// accept appends the segment reserved as j to the outbox journal and enqueues
// it.
func (m *Mirror) accept(j *job) error {
	defer m.uploads.Done()
	jf, pos, err := m.journal.appendAnnounced(j.key, j.data)
	if err != nil {
		m.release(j)
		return err
	}
	m.push(j, jf, pos)
	return nil
}

func (m *Mirror) isClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// full reports, as an error wrapping ErrBackpressure, whether count segments of
// size bytes in all do not fit within the bounds. They always fit into an empty
// outbox.
func (m *Mirror) full(count int, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fullLocked(count, size)
}

func (m *Mirror) fullLocked(count int, size int64) error {
	n := len(m.pending)
	if n == 0 {
		return nil
	}
	if n+count > m.cfg.MaxPending || m.bytes+size > m.cfg.MaxPendingBytes {
		return fmt.Errorf("%w: %d segments, %d bytes pending (bounds %d segments, %d bytes)",
			ErrBackpressure, n, m.bytes, m.cfg.MaxPending, m.cfg.MaxPendingBytes)
	}
	return nil
}

// reserve accounts the segments objs as pending, all or none, waiting for room
// if so configured. The caller calls m.uploads.Done once for each job returned.
func (m *Mirror) reserve(ctx context.Context, objs []transcript.SegmentObject) ([]*job, error) {
	var size int64
	for _, obj := range objs {
		size += int64(len(obj.Data))
	}
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		err := m.fullLocked(len(objs), size)
		if err == nil {
			break
		}
		if !m.cfg.BlockWhenFull {
			m.mu.Unlock()
			return nil, err
		}
		room := m.room
		m.mu.Unlock()
		// Waiting for room, these appends are not about to come: no fsync
		// should wait for them meanwhile.
		m.journal.unexpect(len(objs))
		select {
		case <-room:
		case <-ctx.Done():
			m.journal.expect(len(objs))
			return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		m.journal.expect(len(objs))
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	jobs := make([]*job, len(objs))
	now := time.Now()
	for i, obj := range objs {
		key := obj.Info.Key
		j := &job{key: key, session: transcript.SessionOfKey(key), size: int64(len(obj.Data)), data: obj.Data,
			entries: int(obj.Meta.EntryCount), enqueued: now, done: make(chan struct{})}
		m.pending[j] = struct{}{}
		m.bytes += j.size
		jobs[i] = j
	}
	m.uploads.Add(len(jobs))
	return jobs, nil
}

// release undoes reserve for a segment that never reached the outbox.
func (m *Mirror) release(j *job) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finishLocked(j)
}

// finishLocked removes j from the pending set and wakes its waiters.
func (m *Mirror) finishLocked(j *job) {
	if _, ok := m.pending[j]; !ok {
		return
	}
	delete(m.pending, j)
	m.bytes -= j.size
	j.data = nil
	if j.jf != nil {
		m.journal.done(j.jf, j.pos)
		j.jf = nil
	}
	close(j.done)
	close(m.room)
	m.room = make(chan struct{})
}

// push hands j, held by the journal file jf at pos, to the workers.
func (m *Mirror) push(j *job, jf *journalFile, pos journalPos) {
	m.mu.Lock()
	j.written, j.jf, j.pos = true, jf, pos
	m.queue = append(m.queue, j)
	m.mu.Unlock()
	m.signal()
}
