package mirror

import (
	"context"
	"errors"
	"fmt"
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
	// pending/), pos the record's position there; the record is released when
	// the segment leaves the outbox.
	jf  *journalFile
	pos journalPos
	// written: the segment is durable in the outbox (false while Upload still
	// appends it).
	written  bool
	enqueued time.Time
	done     chan struct{} // closed when the segment left the outbox (uploaded or quarantined)
	err      error         // set before done is closed when the segment failed for good
	// drop: DropQueued takes the segment back while it is in flight (its
	// upload stops unless its PUT succeeds); cancel ends its upload's
	// context (nil until the upload starts); dropped: it was taken back
	// without being stored. All three are guarded by Mirror.mu.
	drop, dropped bool
	cancel        context.CancelFunc
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
		recs, err = box.unqueued(recs, files, func(r journalRecord) { jr.done(r.file, r.pos) })
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
		j := &job{key: r.key, session: transcript.SessionOfKey(r.key), size: int64(len(r.data)), data: r.data, jf: r.file, pos: r.pos,
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
