package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestNew_Config(t *testing.T) {
	store := newStore(t, membucket.New(), "")
	w, _ := transcript.NewWriter("w")
	for name, cfg := range map[string]mirror.Config{
		"no store":  {Writer: w, OutboxDir: t.TempDir()},
		"no writer": {Store: store, OutboxDir: t.TempDir()},
		"no outbox": {Store: store, Writer: w},
		"negative":  {Store: store, Writer: w, OutboxDir: t.TempDir(), Workers: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := mirror.New(cfg)
			require.Error(t, err)
		})
	}
}

func TestMirror_UploadAndAwait(t *testing.T) {
	store := newStore(t, membucket.New(), "pfx")
	dir := t.TempDir()
	m := newMirror(t, store, dir, nil)
	sessions := []*session{newSession("a1", "s1"), newSession("a1", "s2"), newSession("a2", "s1")}
	ctx := ctxTimeout(t, 10*time.Second)
	for i := range 30 {
		s := sessions[i%len(sessions)]
		require.NoError(t, m.Upload(ctx, s.batch(1+i%4)))
	}
	require.NoError(t, m.Upload(ctx, sessiontree.Batch{Ref: sessions[0].ref}), "an empty batch is a no-op")
	require.NoError(t, m.AwaitQuiescence(ctx))
	for _, s := range sessions {
		requireStored(t, store, s.ref, s.ids)
	}
	st := m.Status()
	require.Zero(t, st.Pending)
	require.Zero(t, st.PendingBytes)
	require.Zero(t, st.OldestPending)
	require.Equal(t, uint64(30), st.Uploaded)
	require.NotZero(t, st.UploadedBytes)
	require.Zero(t, st.Failures)
	require.Empty(t, outboxFiles(t, dir, "pending"), "uploaded segments leave the outbox")
	require.NoError(t, m.Close(ctx))
	require.Empty(t, outboxFiles(t, dir, "journal"), "a drained journal is deleted at Close")
	require.ErrorIs(t, m.Upload(ctx, sessions[0].batch(1)), mirror.ErrClosed)
	require.NoError(t, m.Close(ctx), "Close twice")
}

// No goroutine of a Mirror outlives Close, also when Close gives up on hung uploads
// and on Uploads blocked on a full outbox.
func TestMirror_CloseLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	fb := faultbucket.Wrap(membucket.New())
	fb.Hang(faultbucket.OpPut)
	store := newStore(t, fb, "")
	w, _ := transcript.NewWriter("w")
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: t.TempDir(), Workers: 8, MaxPending: 3, BlockWhenFull: true})
	require.NoError(t, err)
	s := newSession("a", "s")
	ctx := ctxTimeout(t, 10*time.Second)
	for range 3 {
		require.NoError(t, m.Upload(ctx, s.batch(1)))
	}
	blocked := make(chan error, 1)
	go func() { blocked <- m.Upload(ctx, s.batch(1)) }()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, m.Close(short), context.DeadlineExceeded)
	require.ErrorIs(t, <-blocked, mirror.ErrClosed)
	goleak.VerifyNone(t, before)
}

func TestMirror_ConcurrentTrees(t *testing.T) {
	store := newStore(t, membucket.New(), "")
	m := newMirror(t, store, "", func(c *mirror.Config) { c.Workers = 3 })
	ctx := ctxTimeout(t, 20*time.Second)
	var wg sync.WaitGroup
	sessions := make([]*session, 8)
	for i := range sessions {
		s := newSession("agent", fmt.Sprintf("s%d", i))
		sessions[i] = s
		wg.Go(func() {
			for range 20 {
				if err := m.Upload(ctx, s.batch(2)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, m.Close(ctx), "Close drains")
	for _, s := range sessions {
		requireStored(t, store, s.ref, s.ids)
	}
}

func TestMirror_UploadDoesNotWaitOnStore(t *testing.T) {
	h := newHungMirror(t, nil) // the store answers nothing until healed
	fb, store, m, s, ctx := h.fb, h.store, h.m, h.s, h.ctx
	for range 5 {
		require.NoError(t, m.Upload(ctx, s.batch(3)), "Upload returns once the outbox file is durable")
	}
	require.Equal(t, 5, m.Status().Pending)
	fb.Heal()
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, s.ref, s.ids)
}

func TestMirror_InvalidBatch(t *testing.T) {
	m := newMirror(t, newStore(t, membucket.New(), ""), "", nil)
	ctx := ctxTimeout(t, 5*time.Second)
	err := m.Upload(ctx, sessiontree.Batch{Ref: transcript.TranscriptRef{AgentID: "a/b", SessionID: "s"}, Entries: [][]byte{entry("x", "", 0, "")}})
	require.ErrorIs(t, err, transcript.ErrInvalidRef)
	err = m.Upload(ctx, sessiontree.Batch{Ref: transcript.TranscriptRef{AgentID: "a", SessionID: "s"}, Entries: [][]byte{[]byte(`{"no":"id"}`)}})
	require.ErrorIs(t, err, pi.ErrInvalidEntry)
	require.Zero(t, m.Status().Pending)
}

func TestMirror_OutboxLocked(t *testing.T) {
	store := newStore(t, membucket.New(), "")
	dir := t.TempDir()
	newMirror(t, store, dir, nil)
	w, _ := transcript.NewWriter("other")
	_, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: dir})
	require.ErrorContains(t, err, "locked")
}

func TestMirror_ResumeFromOutbox(t *testing.T) {
	h := newHungMirror(t, nil)
	fb, store, dir, m, s, ctx := h.fb, h.store, h.dir, h.m, h.s, h.ctx
	for range 7 {
		require.NoError(t, m.Upload(ctx, s.batch(2)))
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err := m.Close(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "7 of 7 segments still pending")
	require.Len(t, journalKeys(t, dir), 7, "what was not uploaded stays in the outbox")
	require.ErrorIs(t, m.AwaitQuiescence(ctx), mirror.ErrClosed)

	// The new mirror finds all 7 while the store still hangs; once healed, its
	// workers upload them (checking Pending after Heal would race the workers).
	m2 := newMirror(t, store, dir, nil)
	require.Equal(t, 7, m2.Status().Pending)
	fb.Heal()
	require.NoError(t, m2.AwaitQuiescence(ctx))
	requireStored(t, store, s.ref, s.ids)
	require.Empty(t, outboxFiles(t, dir, "journal"), "a replayed journal file is deleted once uploaded")
	require.NoError(t, m2.Close(ctx))
}

func TestMirror_Backpressure(t *testing.T) {
	h := newHungMirror(t, func(c *mirror.Config) { c.MaxPending = 3 })
	fb, store, m, s, ctx := h.fb, h.store, h.m, h.s, h.ctx
	for range 3 {
		require.NoError(t, m.Upload(ctx, s.batch(1)))
	}
	err := m.Upload(ctx, s.batch(1))
	require.ErrorIs(t, err, mirror.ErrBackpressure)
	require.Equal(t, 3, m.Status().Pending)
	require.Zero(t, mirror.JournalArriving(m), "a refused Upload announces no append")
	fb.Heal()
	require.NoError(t, m.AwaitQuiescence(ctx))
	s.ids = s.ids[:len(s.ids)-1] // the refused batch was not accepted
	requireStored(t, store, s.ref, s.ids)
}

func TestMirror_BackpressureBytes(t *testing.T) {
	h := newHungMirror(t, func(c *mirror.Config) { c.MaxPendingBytes = 1 })
	fb, m, s, ctx := h.fb, h.m, h.s, h.ctx
	require.NoError(t, m.Upload(ctx, s.batch(1)), "one segment always fits into an empty outbox")
	require.ErrorIs(t, m.Upload(ctx, s.batch(1)), mirror.ErrBackpressure)
	fb.Heal()
}

func TestMirror_BlockWhenFull(t *testing.T) {
	h := newHungMirror(t, func(c *mirror.Config) { c.MaxPending = 2; c.BlockWhenFull = true })
	fb, store, m, s, ctx := h.fb, h.store, h.m, h.s, h.ctx
	require.NoError(t, m.Upload(ctx, s.batch(1)))
	require.NoError(t, m.Upload(ctx, s.batch(1)))

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := m.Upload(short, s.batch(1))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, mirror.ErrBackpressure)
	require.Zero(t, mirror.JournalArriving(m), "an Upload that gave up waiting for room announces no append")
	s.ids = s.ids[:len(s.ids)-1]

	done := make(chan error, 1)
	b := s.batch(1)
	go func() { done <- m.Upload(ctx, b) }()
	select {
	case err := <-done:
		t.Fatalf("Upload returned %v while the outbox is full", err)
	case <-time.After(50 * time.Millisecond):
	}
	fb.Heal()
	require.NoError(t, <-done, "Upload proceeds once there is room")
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, s.ref, s.ids)
}

// An Upload waiting for room in the outbox is not about to append: a leader
// of the journal's group commit must not wait for it before it fsyncs, or
// every fsync would wait the whole bound while the outbox is full.
func TestMirror_UploadWaitingForRoomHoldsNoFsync(t *testing.T) {
	h := newHungMirror(t, func(c *mirror.Config) { c.MaxPending = 1; c.BlockWhenFull = true })
	fb, m, s, ctx := h.fb, h.m, h.s, h.ctx
	require.NoError(t, m.Upload(ctx, s.batch(1)))
	mirror.SetJournalStraggleWait(m, time.Hour)
	blocked := make(chan error, 1)
	go func() { blocked <- m.Upload(ctx, s.batch(1)) }()
	// Whether the Upload is still encoding (announced) or already waiting for
	// room (withdrawn), the append below returns soon; it would wait the hour
	// if the wait for room kept the announcement.
	appended := make(chan error, 1)
	go func() { appended <- mirror.AppendJournal(m, "k/other", []byte("segment")) }()
	select {
	case err := <-appended:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the journal's fsync waited for an Upload that waits for room")
	}
	require.Eventually(t, func() bool { return mirror.JournalArriving(m) == 0 }, 5*time.Second, time.Millisecond,
		"the Upload waiting for room withdrew its announcement")
	fb.Heal()
	require.NoError(t, <-blocked)
}

func TestMirror_CloseUnblocksUpload(t *testing.T) {
	h := newHungMirror(t, func(c *mirror.Config) { c.MaxPending = 1; c.BlockWhenFull = true })
	m, s, ctx := h.m, h.s, h.ctx
	require.NoError(t, m.Upload(ctx, s.batch(1)))
	done := make(chan error, 1)
	go func() { done <- m.Upload(ctx, s.batch(1)) }()
	time.Sleep(20 * time.Millisecond)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, m.Close(short), context.DeadlineExceeded)
	require.ErrorIs(t, <-done, mirror.ErrClosed)
}

func TestMirror_AwaitQuiescenceReportsPending(t *testing.T) {
	h := newHungMirror(t, func(c *mirror.Config) { c.RequestTimeout = 20 * time.Millisecond })
	fb, m, s, ctx := h.fb, h.m, h.s, h.ctx
	for range 3 {
		require.NoError(t, m.Upload(ctx, s.batch(1)))
	}
	// What is reported below needs an attempt that failed (after RequestTimeout)
	// and its retry, which a loaded machine may not reach within the short wait:
	// the test waits for them first (bounded by ctx).
	require.Eventually(t, func() bool {
		st := m.Status()
		return st.Failures > 0 && st.Retries > 0
	}, 5*time.Second, time.Millisecond, "an upload attempt timed out and was retried")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := m.AwaitQuiescence(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "3 of 3 segments still pending")
	require.ErrorContains(t, err, "hung", "the last upload error is reported")
	st := m.Status()
	require.Equal(t, 3, st.Pending)
	require.NotZero(t, st.Failures)
	require.NotZero(t, st.Retries)
	require.Contains(t, st.LastError, "deadline exceeded")
	require.False(t, st.LastErrorTime.IsZero())
	require.Greater(t, st.OldestPending, 100*time.Millisecond)
	fb.Heal()
	require.NoError(t, m.AwaitQuiescence(ctx))
}

// AwaitQuiescence waits only for what was accepted before the call.
func TestMirror_AwaitQuiescenceWatermark(t *testing.T) {
	fb := faultbucket.Wrap(membucket.New())
	m := newMirror(t, newStore(t, fb, ""), "", nil)
	ctx := ctxTimeout(t, 10*time.Second)
	s1, s2 := newSession("a", "s1"), newSession("a", "s2")
	require.NoError(t, m.Upload(ctx, s1.batch(1)))
	require.NoError(t, m.AwaitQuiescence(ctx))
	fb.Hang(faultbucket.OpPut)
	require.NoError(t, m.Upload(ctx, s2.batch(1)))
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, m.AwaitQuiescence(short), "1 of 1 segments")
	fb.Heal()
}

func TestMirror_RetriesTransientFailures(t *testing.T) {
	fb := faultbucket.Wrap(membucket.New())
	fb.FailNext(faultbucket.OpPut, 5, errors.New("503 slow down"))
	store := newStore(t, fb, "")
	m := newMirror(t, store, "", func(c *mirror.Config) { c.Workers = 1 })
	s := newSession("a", "s")
	ctx := ctxTimeout(t, 10*time.Second)
	for range 4 {
		require.NoError(t, m.Upload(ctx, s.batch(2)))
	}
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, s.ref, s.ids)
	st := m.Status()
	require.Equal(t, uint64(5), st.Failures)
	require.Equal(t, uint64(5), st.Retries)
	require.Equal(t, uint64(4), st.Uploaded)
	require.Contains(t, st.LastError, "503 slow down")
	require.Equal(t, int64(4+5), fb.Counts().Put)
}

// A lost response makes the retry meet its own first write: the store takes it as
// success, not as a conflict.
func TestMirror_LostResponseIsIdempotent(t *testing.T) {
	fb := faultbucket.Wrap(membucket.New())
	fb.LoseNextResponses(faultbucket.OpPut, 3)
	store := newStore(t, fb, "")
	m := newMirror(t, store, "", nil)
	s := newSession("a", "s")
	ctx := ctxTimeout(t, 10*time.Second)
	for range 3 {
		require.NoError(t, m.Upload(ctx, s.batch(2)))
	}
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, s.ref, s.ids)
	st := m.Status()
	require.Zero(t, st.Quarantined)
	require.Equal(t, uint64(3), st.Uploaded)
}

// The store's refusal is in AwaitQuiescence's error chain whether the worker
// quarantined the segment while the call waited or before the call began (CI once
// met the second timing and the chain lacked bucket.ErrExists).
func TestMirror_PermanentFailureQuarantines(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before makes the quarantine happen before AwaitQuiescence is called.
		before bool
	}{
		{name: "during the call"},
		{name: "before the call", before: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHungMirror(t, nil)
			mb, fb, store, dir, m, s, ctx := h.mem, h.fb, h.store, h.dir, h.m, h.s, h.ctx
			require.NoError(t, m.Upload(ctx, s.batch(2)))
			// Another writer stores other bytes under the segment's key first.
			keys := journalKeys(t, dir)
			require.Len(t, keys, 1)
			require.NoError(t, mb.Put(ctx, keys[0], strings.NewReader("other"), 5, bucket.PutOptions{Checksum: "other"}))
			fb.Heal()
			if tc.before {
				require.Eventually(t, func() bool { return m.Status().Quarantined == 1 }, 5*time.Second, time.Millisecond)
			}

			err := m.AwaitQuiescence(ctx)
			require.ErrorIs(t, err, mirror.ErrQuarantined)
			require.ErrorIs(t, err, bucket.ErrExists)
			st := m.Status()
			require.Equal(t, 1, st.Quarantined)
			require.Equal(t, uint64(1), st.Failures)
			require.Zero(t, st.Retries)
			require.Zero(t, st.Pending)
			require.Equal(t, keys, outboxFiles(t, dir, "failed"), "never delete data")
			require.NoError(t, m.Close(ctx))
			require.Empty(t, outboxFiles(t, dir, "journal"), "the quarantined copy replaces the record")

			m2 := newMirror(t, store, dir, nil)
			require.Equal(t, 1, m2.Status().Quarantined, "the quarantine is counted, not retried")
			require.Zero(t, m2.Status().Pending)
			err = m2.AwaitQuiescence(ctx)
			require.ErrorIs(t, err, mirror.ErrQuarantined, "a quarantine found at start is reported")
			require.ErrorContains(t, err, "object already exists", "with the reason kept in the outbox")
		})
	}
}

// A conflict is decided by the stored bytes: the same bytes (our own earlier write,
// here without checksum metadata) are success.
func TestMirror_ConflictWithSameBytesIsSuccess(t *testing.T) {
	h := newHungMirror(t, nil)
	mb, fb, store, dir, m, s, ctx := h.mem, h.fb, h.store, h.dir, h.m, h.s, h.ctx
	require.NoError(t, m.Upload(ctx, s.batch(2)))
	recs, err := mirror.ReadJournal(dir)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	data := recs[0].Data
	require.NoError(t, mb.Put(ctx, recs[0].Key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
	fb.Heal()
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, s.ref, s.ids)
	require.Zero(t, m.Status().Quarantined)
}

// A backend that reports a conflict it could not check (ErrExists, but nothing
// readable under the key) does not get the segment quarantined: it is retried.
func TestMirror_UnverifiedConflictIsRetried(t *testing.T) {
	fb := faultbucket.Wrap(membucket.New())
	fb.FailNext(faultbucket.OpPut, 2, bucket.ErrExists)
	store := newStore(t, fb, "")
	m := newMirror(t, store, "", nil)
	s := newSession("a", "s")
	ctx := ctxTimeout(t, 10*time.Second)
	require.NoError(t, m.Upload(ctx, s.batch(2)))
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, s.ref, s.ids)
	st := m.Status()
	require.Zero(t, st.Quarantined)
	require.Equal(t, uint64(2), st.Retries)
	require.Contains(t, st.LastError, "comparing its bytes failed")
}

// Segments left by a process with another store prefix cannot be stored under this
// one: they are quarantined, not retried forever.
func TestMirror_ForeignPrefixQuarantined(t *testing.T) {
	mb := membucket.New()
	dir := t.TempDir()
	fb := faultbucket.Wrap(mb)
	fb.Hang(faultbucket.OpPut)
	m := newMirror(t, newStore(t, fb, "one"), dir, nil)
	ctx := ctxTimeout(t, 10*time.Second)
	require.NoError(t, m.Upload(ctx, newSession("a", "s").batch(1)))
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.Error(t, m.Close(short))

	m2 := newMirror(t, newStore(t, mb, "two"), dir, nil)
	require.ErrorIs(t, m2.AwaitQuiescence(ctx), mirror.ErrQuarantined)
	require.Len(t, outboxFiles(t, dir, "failed"), 1)
}

// A segment whose outbox file someone removed is reported, not silently dropped:
// by the AwaitQuiescence that waits for it, and, when it was lost before any call,
// by the next call (once). The second case used to return nil.
func TestMirror_VanishedOutboxFile(t *testing.T) {
	tests := []struct {
		name string
		// lostFirst: the loss happens before AwaitQuiescence is called.
		lostFirst bool
		wantMsg   string
	}{
		{"awaited", false, "segments failed for good (0 quarantined; "},
		{"lost before the call", true, "1 of 1 segments failed for good (0 quarantined; 1 ended before the call)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := faultbucket.Wrap(membucket.New())
			fb.Hang(faultbucket.OpPut)
			store, dir, s, ctx := newStore(t, fb, ""), t.TempDir(), newSession("a", "s"), ctxTimeout(t, 10*time.Second)
			files := writePending(t, store, dir, s.batch(1), s.batch(1))
			m2 := newMirror(t, store, dir, func(c *mirror.Config) { c.Workers = 1 })
			// The one worker hangs on the first segment; the second file vanishes meanwhile.
			require.Eventually(t, func() bool { return fb.Counts().Put >= 1 }, 5*time.Second, time.Millisecond)
			require.NoError(t, os.Remove(filepath.Join(dir, "pending", filepath.FromSlash(files[1]))))
			var err error
			if tt.lostFirst {
				fb.Heal()
				require.Eventually(t, func() bool { return m2.Status().Pending == 0 }, 5*time.Second, time.Millisecond)
				err = m2.AwaitQuiescence(ctx)
			} else {
				// The call may still come after the loss (the goroutine starts late):
				// then it is reported the other way, with the same error.
				res := make(chan error, 1)
				go func() { res <- m2.AwaitQuiescence(ctx) }()
				fb.Heal()
				err = <-res
			}
			require.ErrorIs(t, err, mirror.ErrLost)
			require.ErrorContains(t, err, tt.wantMsg)
			require.Equal(t, uint64(1), m2.Status().Uploaded)
			require.NoError(t, m2.AwaitQuiescence(ctx), "a loss is reported once")
		})
	}
}

// A segment file under pending/ that a crash cut short while an older version
// wrote it (Upload had not returned, so nobody was told it was stored) is removed
// when a Mirror starts; the complete ones are uploaded.
func TestMirror_TornOutboxFileRemoved(t *testing.T) {
	tests := []struct {
		name string
		tear func(data []byte) []byte
	}{
		{name: "truncated", tear: func(d []byte) []byte { return d[:len(d)/2] }},
		{name: "empty", tear: func([]byte) []byte { return nil }},
		{name: "zeros", tear: func(d []byte) []byte { return make([]byte, len(d)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := faultbucket.Wrap(membucket.New())
			fb.Hang(faultbucket.OpPut)
			store, dir, s, ctx := newStore(t, fb, ""), t.TempDir(), newSession("a", "s"), ctxTimeout(t, 10*time.Second)
			files := writePending(t, store, dir, s.batch(2), s.batch(2), s.batch(2))
			require.True(t, slices.IsSorted(files), "key order is flush order")
			last := filepath.Join(dir, "pending", filepath.FromSlash(files[2]))
			data, err := os.ReadFile(last)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(last, tt.tear(data), 0o644))

			m2 := newMirror(t, store, dir, nil)
			require.Equal(t, 2, m2.Status().Pending)
			require.Equal(t, files[:2], outboxFiles(t, dir, "pending"))
			fb.Heal()
			require.NoError(t, m2.AwaitQuiescence(ctx))
			requireStored(t, store, s.ref, s.ids[:4])
			require.Empty(t, outboxFiles(t, dir, "pending"), "old pending/ files are removed once uploaded")
			require.NoError(t, m2.Close(ctx))
		})
	}
}

// A journal record that a crash tore or garbled while Upload appended it (Upload
// had not returned) is dropped when a Mirror starts; the records before it are
// uploaded, and the replayed file is deleted once they are.
func TestMirror_TornJournalTail(t *testing.T) {
	tests := []struct {
		name string
		tear func(data []byte, start int) []byte
	}{
		{name: "cut in the header", tear: func(d []byte, start int) []byte { return d[:start+3] }},
		{name: "cut in the segment", tear: func(d []byte, _ int) []byte { return d[:len(d)-5] }},
		{name: "flipped byte", tear: func(d []byte, _ int) []byte { d[len(d)-2] ^= 1; return d }},
		{name: "zeros", tear: func(d []byte, start int) []byte { clear(d[start:]); return d }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHungMirror(t, nil)
			for range 3 {
				require.NoError(t, h.m.Upload(h.ctx, h.s.batch(2)))
			}
			short, cancel := context.WithTimeout(h.ctx, 100*time.Millisecond)
			defer cancel()
			require.ErrorIs(t, h.m.Close(short), context.DeadlineExceeded)
			recs, err := mirror.ReadJournal(h.dir)
			require.NoError(t, err)
			require.Len(t, recs, 3)
			require.Equal(t, recs[0].File, recs[2].File)
			data, err := os.ReadFile(recs[2].File)
			require.NoError(t, err)
			// The records, then the zeros written ahead of them.
			require.Greater(t, len(data), recs[2].End)
			require.Equal(t, make([]byte, len(data)-recs[2].End), data[recs[2].End:])
			require.NoError(t, os.WriteFile(recs[2].File, tt.tear(data[:recs[2].End], recs[1].End), 0o644))

			m2 := newMirror(t, h.store, h.dir, nil)
			require.Equal(t, 2, m2.Status().Pending)
			h.fb.Heal()
			require.NoError(t, m2.AwaitQuiescence(h.ctx))
			requireStored(t, h.store, h.s.ref, h.s.ids[:4])
			require.Empty(t, outboxFiles(t, h.dir, "journal"))
			require.NoError(t, m2.Close(h.ctx))
		})
	}
}

// A journal record whose segment a crash left under failed/ (quarantined, the record
// not yet released) or under pending/ (moved back by an operator) is not queued a
// second time: the copy stands for it.
func TestMirror_JournalRecordCopiedElsewhere(t *testing.T) {
	tests := []struct {
		sub                  string
		pending, quarantined int
	}{
		{sub: "failed", pending: 0, quarantined: 1},
		{sub: "pending", pending: 1, quarantined: 0},
	}
	for _, tt := range tests {
		t.Run(tt.sub, func(t *testing.T) {
			h := newHungMirror(t, nil)
			require.NoError(t, h.m.Upload(h.ctx, h.s.batch(2)))
			short, cancel := context.WithTimeout(h.ctx, 50*time.Millisecond)
			defer cancel()
			require.Error(t, h.m.Close(short))
			recs, err := mirror.ReadJournal(h.dir)
			require.NoError(t, err)
			require.Len(t, recs, 1)
			p := filepath.Join(h.dir, tt.sub, filepath.FromSlash(recs[0].Key))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, recs[0].Data, 0o644))

			m2 := newMirror(t, h.store, h.dir, nil)
			st := m2.Status()
			require.Equal(t, tt.pending, st.Pending)
			require.Equal(t, tt.quarantined, st.Quarantined)
			require.Empty(t, outboxFiles(t, h.dir, "journal"), "the record is done")
			h.fb.Heal()
			if tt.quarantined > 0 {
				// Quiescent, but not in the store: the quarantine holds it.
				require.ErrorIs(t, m2.AwaitQuiescence(h.ctx), mirror.ErrQuarantined)
			} else {
				require.NoError(t, m2.AwaitQuiescence(h.ctx))
			}
			require.NoError(t, m2.Close(h.ctx))
		})
	}
}

// TestMirror_UploadTakesBatchLinks checks that Upload makes a segment's
// metadata from the links a tree hands over with its batch instead of parsing
// the entries again (links that differ from the bytes show which was used),
// and parses a batch whose links do not match its entries in number.
func TestMirror_UploadTakesBatchLinks(t *testing.T) {
	store := newStore(t, membucket.New(), "")
	m := newMirror(t, store, t.TempDir(), nil)
	ctx := ctxTimeout(t, 10*time.Second)
	s := newSession("a", "s")
	lastIDs := func() []string {
		t.Helper()
		require.NoError(t, m.AwaitQuiescence(ctx))
		res, err := store.ReadAll(ctx, s.ref)
		require.NoError(t, err)
		var out []string
		for _, seg := range res.Segments {
			meta, err := store.ReadSegmentMeta(ctx, seg.Key)
			require.NoError(t, err)
			out = append(out, meta.LastID)
		}
		return out
	}
	linksOf := func(b sessiontree.Batch) []pi.Links {
		var out []pi.Links
		for _, raw := range b.Entries {
			e, err := pi.ParseEntry(raw)
			require.NoError(t, err)
			out = append(out, e.Links())
		}
		return out
	}

	b := s.batch(3)
	b.Links = linksOf(b)
	b.Links[2].ID = "told"
	require.NoError(t, m.Upload(ctx, b))
	require.Equal(t, []string{"told"}, lastIDs(), "the metadata is the links', not a second parse's")

	b = s.batch(2)
	b.Links = linksOf(b)[:1]
	require.NoError(t, m.Upload(ctx, b))
	require.Equal(t, []string{"told", s.ids[len(s.ids)-1]}, lastIDs(), "links that do not match are not taken")
}
