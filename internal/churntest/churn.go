// Package churntest runs the workload that proves a store keeps every write under load:
// writers appending chains of entries to sessions, readers opening the sessions in a
// loop and checking what they see, and a background job (compaction, say) run again
// and again, all at once. It is test support, not part of any command: tests of several
// packages share it.
package churntest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Config describes one workload. Store, Refs and Entry are required.
type Config struct {
	Store *transcript.Store
	// Refs are the sessions written and read; writer i starts at Refs[i%len(Refs)]
	// and moves on one session per append.
	Refs []transcript.TranscriptRef
	// Writers append PerWriter one-entry segments each (defaults 3 and 15), pausing
	// WriterPause between appends (default 2ms) so readers and the job interleave.
	Writers, PerWriter int
	WriterPause        time.Duration
	// Readers read a session in a loop (default 2) until the writers are done.
	Readers int
	// Job, if set, runs in a loop until the writers are done; an error stops the
	// workload.
	Job func(ctx context.Context) error
	// Entry returns the raw entry with id and parent ("" for a root).
	Entry func(id, parent string) []byte
}

// Result reports what the workload did.
type Result struct {
	// Acked lists, per session, the ids whose append returned, in append order.
	Acked       map[transcript.TranscriptRef][]string
	Reads, Jobs int64
}

// Run runs the workload until every writer is done (and the readers and the job
// have each run a few times), and returns the first failure: an append or job
// error, a read error, or a read that missed an acknowledged entry or held an entry
// without its parent. Loops are bounded by count and by ctx.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Writers <= 0 {
		cfg.Writers = 3
	}
	if cfg.PerWriter <= 0 {
		cfg.PerWriter = 15
	}
	if cfg.Readers <= 0 {
		cfg.Readers = 2
	}
	if cfg.WriterPause <= 0 {
		cfg.WriterPause = 2 * time.Millisecond
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &churn{cfg: cfg, fail: func(err error) { cancel(err) }, done: make(chan struct{}),
		res: Result{Acked: map[transcript.TranscriptRef][]string{}}}
	var writers sync.WaitGroup
	for i := range cfg.Writers {
		writers.Go(func() { c.write(ctx, i) })
	}
	for r := range cfg.Readers {
		c.bg.Add(1)
		go c.loop(ctx, time.Millisecond, func(k int) error { return c.read(ctx, cfg.Refs[(r+k)%len(cfg.Refs)]) })
	}
	if cfg.Job != nil {
		c.bg.Add(1)
		go c.loop(ctx, 5*time.Millisecond, func(int) error {
			if err := cfg.Job(ctx); err != nil {
				return fmt.Errorf("job: %w", err)
			}
			c.jobs.Add(1)
			return nil
		})
	}
	writers.Wait()
	close(c.done)
	c.bg.Wait()
	c.res.Reads, c.res.Jobs = c.reads.Load(), c.jobs.Load()
	if err := context.Cause(ctx); err != nil {
		return c.res, err
	}
	return c.res, nil
}

// churn is the state of one Run.
type churn struct {
	cfg   Config
	fail  func(error) // stops the workload with its error
	done  chan struct{}
	bg    sync.WaitGroup // the readers and the job
	mu    sync.Mutex     // guards res.Acked
	res   Result
	reads atomic.Int64
	jobs  atomic.Int64
}

// acked returns the ids acknowledged to ref so far.
func (c *churn) acked(ref transcript.TranscriptRef) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.res.Acked[ref]...)
}

// write is writer i: PerWriter appends of one entry, each to the next session.
func (c *churn) write(ctx context.Context, i int) {
	w, err := transcript.NewWriter(fmt.Sprintf("churn-%d", i))
	if err != nil {
		c.fail(err)
		return
	}
	parents := map[transcript.TranscriptRef]string{}
	for k := range c.cfg.PerWriter {
		ref := c.cfg.Refs[(i+k)%len(c.cfg.Refs)]
		id := fmt.Sprintf("w%d-%d", i, k)
		if _, err := c.cfg.Store.AppendSegment(ctx, ref, [][]byte{c.cfg.Entry(id, parents[ref])}, w); err != nil {
			c.fail(fmt.Errorf("append %s to %s: %w", id, ref, err))
			return
		}
		parents[ref] = id
		c.mu.Lock()
		c.res.Acked[ref] = append(c.res.Acked[ref], id)
		c.mu.Unlock()
		if !sleep(ctx, c.cfg.WriterPause) {
			return
		}
	}
}

// loop runs step every pause until the writers are done (and at least three
// times), ctx ends or step fails (which stops the workload); at most 100,000
// times.
func (c *churn) loop(ctx context.Context, pause time.Duration, step func(k int) error) {
	defer c.bg.Done()
	for k := 0; k < 100_000; k++ {
		select {
		case <-c.done:
			if k >= 3 {
				return
			}
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		if err := step(k); err != nil {
			c.fail(err)
			return
		}
	}
}

// read reads ref whole and checks that it holds every entry acknowledged before
// the read, each with its parent.
func (c *churn) read(ctx context.Context, ref transcript.TranscriptRef) error {
	before := c.acked(ref)
	got, err := c.cfg.Store.ReadAll(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) && len(before) == 0 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", ref, err)
	}
	c.reads.Add(1)
	if d, m := got.Dangling(), got.Missing(before); len(d)+len(m) > 0 {
		return fmt.Errorf("read %s: %d entries without their parent, acknowledged entries missing: %v", ref, len(d), m)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
