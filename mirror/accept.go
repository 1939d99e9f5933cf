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
	if !m.cfg.BlockWhenFull {
		// Refuse early, before spending time on encoding.
		if err := m.full(0); err != nil {
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
	// A batch larger than a segment holds becomes several, uploaded in order. If
	// one of them is not accepted, the caller hands the whole batch over again:
	// the segments accepted before hold identical copies, which readers collapse.
	for _, obj := range objs {
		if err := m.accept(ctx, obj); err != nil {
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

// accept appends one prepared segment to the outbox journal and enqueues it.
func (m *Mirror) accept(ctx context.Context, obj transcript.SegmentObject) error {
	j, err := m.reserve(ctx, obj.Info.Key, obj.Data)
	if err != nil {
		return err
	}
	defer m.uploads.Done()
	j.entries = int(obj.Meta.EntryCount)
	jf, pos, err := m.journal.append(j.key, j.data)
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

// full reports, as an error wrapping ErrBackpressure, whether a segment of size bytes
// does not fit within the bounds. A segment always fits into an empty outbox.
func (m *Mirror) full(size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fullLocked(size)
}

func (m *Mirror) fullLocked(size int64) error {
	n := len(m.pending)
	if n == 0 {
		return nil
	}
	if n >= m.cfg.MaxPending || m.bytes+size > m.cfg.MaxPendingBytes {
		return fmt.Errorf("%w: %d segments, %d bytes pending (bounds %d segments, %d bytes)",
			ErrBackpressure, n, m.bytes, m.cfg.MaxPending, m.cfg.MaxPendingBytes)
	}
	return nil
}

// reserve accounts a new segment as pending, waiting for room if so configured.
func (m *Mirror) reserve(ctx context.Context, key string, data []byte) (*job, error) {
	size := int64(len(data))
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		err := m.fullLocked(size)
		if err == nil {
			break
		}
		if !m.cfg.BlockWhenFull {
			m.mu.Unlock()
			return nil, err
		}
		room := m.room
		m.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	j := &job{key: key, session: transcript.SessionOfKey(key), size: size, data: data, enqueued: time.Now(), done: make(chan struct{})}
	m.pending[j] = struct{}{}
	m.bytes += size
	m.uploads.Add(1)
	return j, nil
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
