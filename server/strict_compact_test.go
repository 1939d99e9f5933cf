package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// compactedRun is a strict session appended to through a server by several
// clients while the compaction job compacts it, as transcript-compact does.
type compactedRun struct {
	tb    testing.TB
	ts    *testServer
	store *transcript.Store // the compaction job's own store on the bucket
	ref   transcript.TranscriptRef
	id    string
	// maxNamed is the most segments the head named after a compaction run.
	maxNamed atomic.Int64
}

// newCompactedRun creates strict session id through a server on b and finds the
// session's place in the bucket for the compaction job.
func newCompactedRun(tb testing.TB, b bucket.Bucket, id string) *compactedRun {
	ts := newServer(tb, b, server.Config{})
	c := ts.as(tb, "acme", "alice")
	code, body := c.do("POST", "/v1/sessions", map[string]any{"id": id, "cwd": "/w", "strict": true})
	require.Equal(tb, http.StatusCreated, code, string(body))
	store, err := transcript.New(transcript.Config{Bucket: b})
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, store.Close()) })
	repos, err := repository.NewService(store, repository.Config{})
	require.NoError(tb, err)
	repo, err := repos.Repository(repository.Owner{Tenant: "acme", User: "alice"})
	require.NoError(tb, err)
	s, err := repo.Open(tb.Context(), id)
	require.NoError(tb, err)
	return &compactedRun{tb: tb, ts: ts, store: store, ref: s.Ref(), id: id}
}

// compactEvery runs the compaction job on the session every interval until stop
// is closed, and reports its first error on the channel it returns (closed when
// it has stopped).
func (r *compactedRun) compactEvery(ctx context.Context, interval time.Duration, opts transcript.CompactOptions, stop <-chan struct{}) <-chan error {
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for runs := 0; ; runs++ {
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
			if _, err := r.store.Compact(ctx, r.ref, opts); err != nil {
				errc <- fmt.Errorf("compaction %d: %w", runs, err)
				return
			}
			h, err := r.store.ReadHead(ctx, r.ref)
			if err != nil {
				errc <- fmt.Errorf("head after compaction %d: %w", runs, err)
				return
			}
			if n := int64(len(h.Segments)); n > r.maxNamed.Load() {
				r.maxNamed.Store(n)
			}
		}
	}()
	return errc
}

// appendOne appends entry id after the committed head as client c, taking the
// head a stale_head answer reports and trying again, as Pi's adapter does. It
// returns how long the acknowledged append took, retries included.
func (r *compactedRun) appendOne(c *client, head *string, id string) (time.Duration, error) {
	start := time.Now()
	for range 100 {
		code, body := c.do("POST", "/v1/sessions/"+r.id+"/entries", appendReq(*head, msg(id, *head, "user", "turn "+id)))
		switch code {
		case http.StatusOK:
			*head = id
			return time.Since(start), nil
		case http.StatusConflict:
			e := decode[errResp](r.tb, body)
			if e.Error.Code != server.CodeStaleHead {
				return 0, fmt.Errorf("append %s: %d %s", id, code, body)
			}
			*head = ""
			if e.Error.Head != nil {
				*head = *e.Error.Head
			}
		default:
			return 0, fmt.Errorf("append %s: %d %s", id, code, body)
		}
	}
	return 0, fmt.Errorf("append %s: still stale after 100 tries", id)
}

// appendAll has each client append perClient entries concurrently and returns
// each acknowledged append's id and latency in the order they were acknowledged.
func (r *compactedRun) appendAll(clients int, perClient int) ([]string, []time.Duration, error) {
	var mu sync.Mutex
	var acked []string
	var lat []time.Duration
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		c := r.ts.as(r.tb, "acme", "alice")
		wg.Go(func() {
			head := ""
			for k := range perClient {
				id := fmt.Sprintf("c%d-%05d", i, k)
				d, err := r.appendOne(c, &head, id)
				if err != nil {
					errs[i] = err
					return
				}
				mu.Lock()
				acked, lat = append(acked, id), append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acked, lat, errors.Join(errs...)
}

// open reads the session's metadata through server ts, as a client opening it
// does, and returns its head.
func (r *compactedRun) open(ts *testServer) metadata {
	code, body := ts.as(r.tb, "acme", "alice").do("GET", "/v1/sessions/"+r.id, nil)
	require.Equal(r.tb, http.StatusOK, code, string(body))
	m := decode[metadata](r.tb, body)
	require.NotNil(r.tb, m.Head)
	return m
}

// readIDs reads the session through server ts as the adapter does (metadata,
// then page by page) and returns its entries' ids in sequence order and its head.
func (r *compactedRun) readIDs(ts *testServer) ([]string, string) {
	m := r.open(ts)
	c := ts.as(r.tb, "acme", "alice")
	var out []string
	for after := 0; ; {
		code, body := c.do("GET", fmt.Sprintf("/v1/sessions/%s/entries?after=%d", r.id, after), nil)
		require.Equal(r.tb, http.StatusOK, code, string(body))
		p := decode[page](r.tb, body)
		if len(p.Entries) == 0 {
			break
		}
		for _, e := range p.Entries {
			out = append(out, decode[struct{ ID string }](r.tb, e).ID)
		}
		after = p.NextSeq
	}
	require.Equal(r.tb, len(out), m.EntryCount)
	return out, *m.Head
}

// TestServer_StrictCompactedWhileAppending: two clients append to one strict
// session through the server while the compaction job compacts it; every
// acknowledged append is there, once, in the order of acknowledgement within
// each client, the session's order and head do not change when it is compacted
// in full, and a server that never saw the session then opens it with two GETs
// (the head, the one segment it names). (BenchmarkServer_AppendStrictCompacted measures the latency.)
func TestServer_StrictCompactedWhileAppending(t *testing.T) {
	const perClient = 150
	ctx := t.Context()
	b := membucket.New()
	r := newCompactedRun(t, b, "long")
	stop := make(chan struct{})
	compactErr := r.compactEvery(ctx, 5*time.Millisecond,
		transcript.CompactOptions{MinSegments: 4, DeleteDelay: 20 * time.Millisecond}, stop)
	acked, _, err := r.appendAll(2, perClient)
	close(stop)
	require.NoError(t, err)
	require.NoError(t, <-compactErr)

	got, head := r.readIDs(r.ts)
	require.ElementsMatch(t, acked, got, "every acknowledged append, once")
	for i := range 2 {
		var mine []string
		for _, id := range got {
			if id[:3] == fmt.Sprintf("c%d-", i) {
				mine = append(mine, id)
			}
		}
		require.True(t, slices.IsSorted(mine), "client %d's entries in its order", i)
	}
	require.Equal(t, got[len(got)-1], head, "the head is the last entry")
	require.Contains(t, []string{fmt.Sprintf("c0-%05d", perClient-1), fmt.Sprintf("c1-%05d", perClient-1)}, head,
		"the head is a client's last append")

	h, err := r.store.ReadHead(ctx, r.ref)
	require.NoError(t, err)
	require.Less(t, len(h.Segments), perClient, "the job compacted the session while it was appended to")
	_, err = r.store.Compact(ctx, r.ref, transcript.CompactOptions{Full: true, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	h, err = r.store.ReadHead(ctx, r.ref)
	require.NoError(t, err)
	require.Len(t, h.Segments, 1, "a full compaction leaves the head one segment to name")
	cb, requests := countingBucket(t, b)
	fresh := newServer(t, cb, server.Config{})
	require.Equal(t, len(got), r.open(fresh).EntryCount)
	require.Equal(t, 2, requests(), "a fresh server opens the compacted session with a GET of the head and one of its segment")
	after, afterHead := r.readIDs(fresh)
	require.Equal(t, got, after, "order unchanged by compaction")
	require.Equal(t, head, afterHead)
}

// BenchmarkServer_AppendStrictCompacted measures whether appends through the
// server stay as fast as a strict session grows while the compaction job keeps
// compacting it: each iteration has two clients append 5,000 entries each to a
// new session on MinIO through `transcript-serve`'s handler while Store.Compact
// runs on it every 200 ms (what transcript-compact runs, inputs deleted after
// 1 s), and reports the mean latency of the first and the last 1,000
// acknowledged appends and their ratio, the requests a fresh server's open of
// the session costs after a last, full compaction, the segments its head names
// then, and the most it named after a compaction run while the clients appended
// (the head object's size follows it).
// Run it once:
//
//	go test ./server -run '^$' -bench AppendStrictCompacted -benchtime 1x -timeout 30m
func BenchmarkServer_AppendStrictCompacted(b *testing.B) {
	const clients, perClient, window = 2, 5000, 1000
	ctx := b.Context()
	for i := 0; b.Loop(); i++ {
		bk := s3test.NewS3Bucket(b, "serve-long-")
		r := newCompactedRun(b, bk, fmt.Sprintf("long-%d", i))
		stop := make(chan struct{})
		compactErr := r.compactEvery(ctx, 200*time.Millisecond,
			transcript.CompactOptions{MinSegments: 8, DeleteDelay: time.Second}, stop)
		acked, lat, err := r.appendAll(clients, perClient)
		close(stop)
		require.NoError(b, err)
		require.NoError(b, <-compactErr)
		require.Len(b, acked, clients*perClient)

		_, err = r.store.Compact(ctx, r.ref, transcript.CompactOptions{Full: true, DeleteDelay: transcript.DeleteAtOnce})
		require.NoError(b, err)
		h, err := r.store.ReadHead(ctx, r.ref)
		require.NoError(b, err)
		cb, requests := countingBucket(b, bk)
		fresh := newServer(b, cb, server.Config{})
		require.Equal(b, len(acked), r.open(fresh).EntryCount)
		opened := requests()
		got, _ := r.readIDs(fresh)
		require.ElementsMatch(b, acked, got)

		mean := func(d []time.Duration) float64 {
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			return float64(sum.Microseconds()) / 1000 / float64(len(d))
		}
		first, last := mean(lat[:window]), mean(lat[len(lat)-window:])
		b.ReportMetric(first, "first-ms/append")
		b.ReportMetric(last, "last-ms/append")
		b.ReportMetric(last/first, "last/first")
		b.ReportMetric(float64(opened), "open-requests")
		b.ReportMetric(float64(len(h.Segments)), "head-segments")
		b.ReportMetric(float64(r.maxNamed.Load()), "max-named-segments")
	}
}
