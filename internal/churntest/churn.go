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
	var (
		mu    sync.Mutex
		res   = Result{Acked: map[transcript.TranscriptRef][]string{}}
		reads atomic.Int64
		jobs  atomic.Int64
	)
	fail := func(err error) { cancel(err) }
	acked := func(ref transcript.TranscriptRef) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), res.Acked[ref]...)
	}

	var writers sync.WaitGroup
	for i := range cfg.Writers {
		writers.Add(1)
		go func() {
			defer writers.Done()
			w, err := transcript.NewWriter(fmt.Sprintf("churn-%d", i))
			if err != nil {
				fail(err)
				return
			}
			parents := map[transcript.TranscriptRef]string{}
			for k := range cfg.PerWriter {
				ref := cfg.Refs[(i+k)%len(cfg.Refs)]
				id := fmt.Sprintf("w%d-%d", i, k)
				if _, err := cfg.Store.AppendSegment(ctx, ref, [][]byte{cfg.Entry(id, parents[ref])}, w); err != nil {
					fail(fmt.Errorf("append %s to %s: %w", id, ref, err))
					return
				}
				parents[ref] = id
				mu.Lock()
				res.Acked[ref] = append(res.Acked[ref], id)
				mu.Unlock()
				if !sleep(ctx, cfg.WriterPause) {
					return
				}
			}
		}()
	}

	done := make(chan struct{})
	var bg sync.WaitGroup
	loop := func(pause time.Duration, step func(k int) error) {
		defer bg.Done()
		for k := 0; k < 100_000; k++ {
			select {
			case <-done:
				if k >= 3 {
					return
				}
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
			if err := step(k); err != nil {
				fail(err)
				return
			}
		}
	}
	for r := range cfg.Readers {
		bg.Add(1)
		go loop(time.Millisecond, func(k int) error {
			ref := cfg.Refs[(r+k)%len(cfg.Refs)]
			before := acked(ref)
			got, err := cfg.Store.ReadAll(ctx, ref)
			if errors.Is(err, bucket.ErrNotFound) && len(before) == 0 {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", ref, err)
			}
			reads.Add(1)
			if d, m := got.Dangling(), got.Missing(before); len(d)+len(m) > 0 {
				return fmt.Errorf("read %s: %d entries without their parent, acknowledged entries missing: %v", ref, len(d), m)
			}
			return nil
		})
	}
	if cfg.Job != nil {
		bg.Add(1)
		go loop(5*time.Millisecond, func(int) error {
			if err := cfg.Job(ctx); err != nil {
				return fmt.Errorf("job: %w", err)
			}
			jobs.Add(1)
			return nil
		})
	}
	writers.Wait()
	close(done)
	bg.Wait()
	res.Reads, res.Jobs = reads.Load(), jobs.Load()
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
