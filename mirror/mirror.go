package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// Sentinel errors of the Mirror, tested with errors.Is.
var (
	// ErrClosed is returned by Upload after Close, and by AwaitQuiescence for
	// segments the Mirror stopped before uploading them (they stay in the outbox).
	ErrClosed = errors.New("mirror closed")
	// ErrBackpressure is wrapped by Upload when MaxPending or MaxPendingBytes is
	// reached and Config.BlockWhenFull is false. The batch was not accepted; the
	// caller may hand it over again later.
	ErrBackpressure = errors.New("mirror outbox full")
	// ErrQuarantined is wrapped by AwaitQuiescence when the store rejected a segment
	// for good (another object under its key, an invalid key or reference). The
	// segment was moved to the outbox quarantine, never deleted.
	ErrQuarantined = errors.New("segment rejected by the store and quarantined")
	// ErrLost is wrapped by AwaitQuiescence when a segment's file under the
	// outbox's pending/ vanished (removed by someone else) before it could be
	// uploaded.
	ErrLost = errors.New("segment vanished from the outbox before upload")
)

// Mirror is the asynchronous, crash-safe Uploader: Upload appends the batch as one
// segment to the journal of a local outbox and returns once it is durable (with
// group commit: concurrent Uploads share one fsync); a bounded pool of workers
// uploads the segments to the store in the background, retrying transient failures
// with exponential backoff and jitter until they succeed, and lets a segment leave
// the outbox only after the store confirmed it. Puts are create-only and
// idempotent, so uploading a segment again after a crash is harmless.
//
// Create one Mirror per process and share it between all SessionTrees: the worker
// pool, the bounds and the outbox are per Mirror, and an outbox belongs to one Mirror
// at a time. A Mirror is safe for concurrent use.
type Mirror struct {
	cfg     Config
	box     *outbox
	journal *journal

	// ctx is cancelled by Close to stop the workers (aborting in-flight PUTs and
	// backoff waits); workers is their wait group.
	ctx     context.Context
	cancel  context.CancelFunc
	workers sync.WaitGroup
	// uploads counts Upload calls between reserve and push, so that Close does not
	// release the outbox while one is still writing to it.
	uploads sync.WaitGroup
	// wake has room for one signal per worker; a push sends without blocking.
	wake chan struct{}

	mu      sync.Mutex
	closed  bool
	queue   []*job            // accepted segments waiting for a worker, FIFO
	busy    map[string]bool   // sessions with a segment in flight: one at a time each
	pending map[*job]struct{} // accepted and not yet done (queued, in flight or retrying)
	bytes   int64             // total size of pending
	// room is closed (and replaced) whenever a pending segment is done, to wake
	// Uploads blocked on a full outbox.
	room  chan struct{}
	stats counters
	// stuck holds the stuck sessions by "namespace/agent/session" (see stuck.go).
	stuck map[string]*stuckRecord
	// lost holds the segments that ended with ErrLost and that no AwaitQuiescence
	// has reported yet (one may end before the call that should report it).
	lost map[*job]struct{}
}

// job is one segment on its way to the store.
type job struct {
	key     string
	session string // the key's session prefix (see transcript.SessionOfKey)
	size    int64
	entries int    // entry count, 0 when not known (read from the file if needed)
	data    []byte // nil for segments found under pending/ at start: read on upload
	// jf is the journal file that holds the segment (nil for a file under
	// pending/); its record is released when the segment leaves the outbox.
	jf *journalFile
	// written: the segment is durable in the outbox (false while Upload still
	// appends it).
	written  bool
	enqueued time.Time
	done     chan struct{} // closed when the segment left the outbox (uploaded or quarantined)
	err      error         // set before done is closed when the segment failed for good
}

var _ sessiontree.Uploader = (*Mirror)(nil)

// New opens (creating if needed) and locks the outbox cfg.OutboxDir, enqueues every
// segment a previous process left there, and starts the upload workers. The caller
// must Close the Mirror.
func New(cfg Config) (*Mirror, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	box, err := openOutbox(cfg.OutboxDir)
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	files, failed, err := box.scan()
	var torn []string
	if err == nil {
		files, torn, err = box.dropTorn(files, func(data []byte) error {
			_, err := cfg.Store.DecodeSegment(data)
			return err
		})
	}
	if err != nil {
		box.close()
		return nil, fmt.Errorf("mirror: %w", err)
	}
	if len(torn) > 0 {
		cfg.Logger.Warn("mirror: removed segments that a crash cut short before they were accepted", "keys", torn, "outbox", cfg.OutboxDir)
	}
	jr, recs, err := openJournal(cfg.OutboxDir)
	if err == nil {
		recs, err = box.unqueued(recs, files, jr.done)
	}
	if err != nil {
		box.close()
		return nil, fmt.Errorf("mirror: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Mirror{
		cfg: cfg, box: box, journal: jr, ctx: ctx, cancel: cancel,
		wake:    make(chan struct{}, cfg.Workers),
		pending: make(map[*job]struct{}, len(files)+len(recs)),
		busy:    make(map[string]bool),
		room:    make(chan struct{}),
		stuck:   map[string]*stuckRecord{},
		lost:    map[*job]struct{}{},
	}
	m.stats.quarantined = failed
	if err := m.loadStuck(); err != nil {
		cancel()
		box.close()
		return nil, fmt.Errorf("mirror: %w", err)
	}
	for _, f := range files {
		j := &job{key: f.key, session: transcript.SessionOfKey(f.key), size: f.size, enqueued: f.mtime, done: make(chan struct{}), written: true}
		m.pending[j] = struct{}{}
		m.bytes += j.size
		m.queue = append(m.queue, j)
	}
	// The journal's records come after pending/: a session's segments under
	// pending/ were written by an older version or released from the quarantine,
	// both before anything the journal holds of it.
	for _, r := range recs {
		j := &job{key: r.key, session: transcript.SessionOfKey(r.key), size: int64(len(r.data)), data: r.data, jf: r.file,
			enqueued: time.Now(), done: make(chan struct{}), written: true}
		m.pending[j] = struct{}{}
		m.bytes += j.size
		m.queue = append(m.queue, j)
	}
	if n := len(files) + len(recs); n > 0 {
		cfg.Logger.Info("mirror: resuming segments left in the outbox", "count", n, "bytes", m.bytes, "outbox", cfg.OutboxDir)
	}
	for range cfg.Workers {
		m.workers.Add(1)
		go m.work()
	}
	return m, nil
}

// Upload encodes b.Entries as one segment of b.Ref, appends it durably to the
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
	objs, err := m.cfg.Store.PrepareSegments(b.Ref, b.Entries, m.cfg.Writer)
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

// accept appends one prepared segment to the outbox journal and enqueues it.
func (m *Mirror) accept(ctx context.Context, obj transcript.SegmentObject) error {
	j, err := m.reserve(ctx, obj.Info.Key, obj.Data)
	if err != nil {
		return err
	}
	defer m.uploads.Done()
	j.entries = int(obj.Meta.EntryCount)
	jf, err := m.journal.append(j.key, j.data)
	if err != nil {
		m.release(j)
		return err
	}
	m.push(j, jf)
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
		m.journal.done(j.jf)
		j.jf = nil
	}
	close(j.done)
	close(m.room)
	m.room = make(chan struct{})
}

// push hands j, held by the journal file jf, to the workers.
func (m *Mirror) push(j *job, jf *journalFile) {
	m.mu.Lock()
	j.written, j.jf = true, jf
	m.queue = append(m.queue, j)
	m.mu.Unlock()
	m.signal()
}

// AwaitQuiescence blocks until every segment accepted before the call (by Upload, or
// found in the outbox at start) has left the outbox: it returns nil when all were
// uploaded, and an error wrapping ErrQuarantined when the store rejected some or the
// quarantine holds segments (of stuck sessions not released yet, see Release), or
// ErrLost when an outbox file vanished (also before the call, reported once). If ctx
// ends first, or the Mirror is closed with segments left, it returns an error wrapping
// ctx.Err() (or ErrClosed) that says how many are still pending and the last upload
// error.
func (m *Mirror) AwaitQuiescence(ctx context.Context) error {
	m.mu.Lock()
	jobs := make([]*job, 0, len(m.pending))
	for j := range m.pending {
		jobs = append(jobs, j)
	}
	m.mu.Unlock()
	return m.await(ctx, jobs)
}

// await waits for jobs as AwaitQuiescence describes.
func (m *Mirror) await(ctx context.Context, jobs []*job) error {
	stopped := m.ctx.Done()
	var waitErr error
	for i, j := range jobs {
		select {
		case <-j.done:
			continue
		case <-ctx.Done():
			waitErr = ctx.Err()
		case <-stopped:
			waitErr = ErrClosed
		}
		left := 0
		for _, k := range jobs[i:] {
			select {
			case <-k.done:
			default:
				left++
			}
		}
		if left == 0 {
			break
		}
		st := m.Status()
		return fmt.Errorf("mirror: await quiescence: %w: %d of %d segments still pending (last error: %s)",
			waitErr, left, len(jobs), orNone(st.LastError))
	}
	// A segment lost before the call is reported by this call, once.
	m.mu.Lock()
	for _, j := range jobs {
		delete(m.lost, j)
	}
	total := len(jobs)
	for j := range m.lost {
		jobs = append(jobs, j)
	}
	clear(m.lost)
	m.mu.Unlock()
	failed, quarantined := 0, 0
	var errs []error
	for _, j := range jobs {
		if j.err == nil {
			continue
		}
		failed++
		if errors.Is(j.err, ErrQuarantined) {
			quarantined++
		}
		if len(errs) < 3 {
			errs = append(errs, j.err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("mirror: await quiescence: %d of %d segments failed for good (%d quarantined; %d ended before the call): %w",
			failed, len(jobs), quarantined, len(jobs)-total, errors.Join(errs...))
	}
	// A segment quarantined before the call (a worker may refuse it between
	// Upload's return and this call) was accepted and is not in the store either.
	return m.quarantinedNow()
}

// quarantinedNow returns how many segments the quarantine holds, of how many
// sessions, and an error wrapping ErrQuarantined that gives the reason of one of
// them and wraps the errors that quarantined segments in this process, so that
// errors.Is finds the store's refusal (bucket.ErrExists, say) however the timing
// fell: before or during the call that reports it. It returns nil when the
// quarantine is empty.
func (m *Mirror) quarantinedNow() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	segments, sessions, reason := 0, 0, ""
	var causes []*stuckRecord
	for _, st := range m.stuck {
		if st.Segments == 0 {
			continue
		}
		segments += st.Segments
		sessions++
		if reason == "" || st.Error < reason {
			reason = st.Error
		}
		if st.cause != nil {
			causes = append(causes, st)
		}
	}
	if segments == 0 {
		return nil
	}
	msg := fmt.Sprintf("mirror: await quiescence: %d segments of %d sessions are in the quarantine (%s)", segments, sessions, reason)
	if len(causes) == 0 {
		return fmt.Errorf("%s: %w", msg, ErrQuarantined)
	}
	slices.SortFunc(causes, func(a, b *stuckRecord) int { return strings.Compare(a.Session, b.Session) })
	errs := make([]error, 0, min(len(causes), 3))
	for _, st := range causes[:min(len(causes), 3)] {
		errs = append(errs, st.cause)
	}
	return fmt.Errorf("%s: %w: %w", msg, ErrQuarantined, errors.Join(errs...))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Close stops accepting batches (Upload returns ErrClosed), waits until every pending
// segment is uploaded or ctx ends, then stops the workers (aborting in-flight uploads)
// and releases the outbox. Segments not uploaded by then stay in the outbox and are
// uploaded by the next Mirror on it. Close returns an error wrapping ctx.Err() when
// segments were left. No goroutine of the Mirror outlives Close. Calling Close again
// returns nil.
func (m *Mirror) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.room) // wake blocked Uploads: they see closed
	m.room = make(chan struct{})
	m.mu.Unlock()

	drainErr := m.AwaitQuiescence(ctx)
	if drainErr != nil && ctx.Err() == nil {
		drainErr = nil // only segments that failed for good: nothing left to do; Status reports them
	}
	m.cancel()
	m.workers.Wait()
	m.uploads.Wait()
	if err := m.journal.close(); err != nil {
		drainErr = errors.Join(drainErr, fmt.Errorf("mirror: close outbox journal: %w", err))
	}
	if err := m.box.close(); err != nil {
		drainErr = errors.Join(drainErr, fmt.Errorf("mirror: close outbox: %w", err))
	}
	return drainErr
}
