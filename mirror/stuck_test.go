package mirror_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// refusingBucket refuses, for good, every Put of a key under one session while
// refusing is set: the store's answer to an object it can never take.
type refusingBucket struct {
	bucket.Bucket
	session  string
	refusing atomic.Bool
}

func (b *refusingBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if b.refusing.Load() && strings.Contains(key, "/"+b.session+"/") {
		return fmt.Errorf("put %s: %w: refused by the test", key, bucket.ErrInvalidKey)
	}
	return b.Bucket.Put(ctx, key, r, size, opts)
}

// TestMirror_StuckSessionIsVisible: a segment the store refuses for good leaves its
// session stuck, visibly (Status, metrics, InspectOutbox), with its later segments
// held back in order, while other sessions keep uploading; Release uploads the
// held-back segments once the cause is gone.
func TestMirror_StuckSessionIsVisible(t *testing.T) {
	rb := &refusingBucket{Bucket: membucket.New(), session: "stuck"}
	rb.refusing.Store(true)
	store := newStore(t, rb, "")
	dir := t.TempDir()
	m := newMirror(t, store, dir, func(c *mirror.Config) { c.MetricLabels = prometheus.Labels{"replica": "r1"} })
	ctx := ctxTimeout(t, 20*time.Second)
	stuck, other := newSession("a", "stuck"), newSession("a", "other")

	require.NoError(t, m.Upload(ctx, stuck.batch(2)))
	require.ErrorIs(t, m.AwaitQuiescence(ctx), mirror.ErrQuarantined)
	require.NoError(t, m.Upload(ctx, stuck.batch(3)), "later batches are accepted into the outbox")
	require.NoError(t, m.Upload(ctx, other.batch(4)))
	// The later segment is held back as soon as a worker meets it, perhaps before
	// this wait starts: only Status tells.
	_ = m.AwaitQuiescence(ctx)
	requireStored(t, store, other.ref, other.ids)

	st := m.Status()
	require.Len(t, st.Stuck, 1)
	require.Equal(t, "default/a/stuck", st.Stuck[0].Session)
	require.Equal(t, 2, st.Stuck[0].Segments)
	require.Equal(t, 5, st.Stuck[0].Entries, "every entry of the session not in the bucket")
	require.Contains(t, st.Stuck[0].Error, "refused by the test")
	require.Equal(t, 2, st.Quarantined)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m.Collector()))
	require.Equal(t, float64(1), gauge(t, reg, mirror.MetricStuckSessions))
	require.Equal(t, float64(5), gauge(t, reg, mirror.MetricStuckSessionEntries))
	require.Equal(t, 1, testutil.CollectAndCount(m.Collector(), mirror.MetricStuckSessionEntries))

	inspected, err := mirror.InspectOutbox(dir)
	require.NoError(t, err)
	require.Len(t, inspected, 1)
	require.Equal(t, st.Stuck[0].Session, inspected[0].Session)
	require.Equal(t, 5, inspected[0].Entries)
	require.Contains(t, inspected[0].Error, "refused by the test")

	// The operator fixes the cause and releases the session.
	rb.refusing.Store(false)
	n, err := m.Release(ctx, stuck.ref)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, stuck.ref, stuck.ids)
	st = m.Status()
	require.Empty(t, st.Stuck)
	require.Zero(t, st.Quarantined)
	require.NoError(t, m.Upload(ctx, stuck.batch(1)))
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, stuck.ref, stuck.ids)
}

// A segment the store refused before AwaitQuiescence was called (the worker can be
// that quick) still makes it report the quarantine: quiescent is not stored. It
// used to return nil when the refusal came first.
func TestMirror_AwaitQuiescenceAfterQuarantine(t *testing.T) {
	rb := &refusingBucket{Bucket: membucket.New(), session: "stuck"}
	rb.refusing.Store(true)
	store := newStore(t, rb, "")
	m := newMirror(t, store, t.TempDir(), nil)
	ctx := ctxTimeout(t, 20*time.Second)
	stuck := newSession("a", "stuck")
	require.NoError(t, m.Upload(ctx, stuck.batch(2)))
	require.Eventually(t, func() bool { return m.Status().Quarantined == 1 }, 10*time.Second, time.Millisecond)
	require.ErrorIs(t, m.AwaitQuiescence(ctx), mirror.ErrQuarantined)

	rb.refusing.Store(false)
	n, err := m.Release(ctx, stuck.ref)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, stuck.ref, stuck.ids)
}

// TestMirror_StuckAcrossRestart: a stuck session found in the quarantine at start
// is reported, and ReleaseOutbox (the offline form, on a stopped outbox) makes the
// next Mirror upload it.
func TestMirror_StuckAcrossRestart(t *testing.T) {
	rb := &refusingBucket{Bucket: membucket.New(), session: "stuck"}
	rb.refusing.Store(true)
	store := newStore(t, rb, "")
	dir := t.TempDir()
	ctx := ctxTimeout(t, 20*time.Second)
	s := newSession("a", "stuck")
	m := newMirror(t, store, dir, nil)
	require.NoError(t, m.Upload(ctx, s.batch(2)))
	require.ErrorIs(t, m.AwaitQuiescence(ctx), mirror.ErrQuarantined)
	_, err := mirror.ReleaseOutbox(dir, "default/a/stuck")
	require.Error(t, err, "the outbox is locked while a Mirror runs")
	require.NoError(t, m.Close(ctx))

	m2 := newMirror(t, store, dir, nil)
	st := m2.Status()
	require.Len(t, st.Stuck, 1)
	require.Equal(t, 2, st.Stuck[0].Entries)
	require.Contains(t, st.Stuck[0].Error, "refused by the test")
	require.NoError(t, m2.Close(ctx))

	rb.refusing.Store(false)
	n, err := mirror.ReleaseOutbox(dir, "default/a/stuck")
	require.NoError(t, err)
	require.Equal(t, 1, n)
	m3 := newMirror(t, store, dir, nil)
	require.NoError(t, m3.AwaitQuiescence(ctx))
	require.Empty(t, m3.Status().Stuck)
	requireStored(t, store, s.ref, s.ids)
}

// TestMirror_RefusedBatchIsVisible: a batch the store can never hold (an entry
// over the limit, which a SessionTree refuses at Append but another caller may
// hand over) is refused by Upload with ErrStuck and reported, while other sessions
// keep uploading; the session's next accepted batch clears it.
func TestMirror_RefusedBatchIsVisible(t *testing.T) {
	store := newStore(t, membucket.New(), "")
	m := newMirror(t, store, "", nil)
	ctx := ctxTimeout(t, 20*time.Second)
	bad, other := newSession("a", "bad"), newSession("a", "other")
	b := bad.batch(1)
	b.Entries = append(b.Entries, []byte(`{"type":"custom","id":"huge","parentId":null,"data":"`+strings.Repeat("x", segment.DefaultMaxEntrySize)+`"}`))
	err := m.Upload(ctx, b)
	require.ErrorIs(t, err, mirror.ErrStuck)
	require.ErrorIs(t, err, segment.ErrEntryTooLarge)
	require.Zero(t, mirror.JournalArriving(m), "a refused batch announces no append")
	require.NoError(t, m.Upload(ctx, other.batch(3)))
	require.NoError(t, m.AwaitQuiescence(ctx))
	requireStored(t, store, other.ref, other.ids)
	st := m.Status()
	require.Len(t, st.Stuck, 1)
	require.Equal(t, "default/a/bad", st.Stuck[0].Session)
	require.Equal(t, 2, st.Stuck[0].Entries)
	require.Zero(t, st.Stuck[0].Segments)
	require.Contains(t, st.Stuck[0].Error, "64 MiB")

	require.NoError(t, m.Upload(ctx, bad.batch(1)))
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.Empty(t, m.Status().Stuck)
}
