package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
)

// serveClients are the client counts of item 11.
var serveClients = []int{1, 16}

// serveKey signs the bench's tokens.
var serveKey = []byte("transcript-bench-serve-key-0123456789")

// runServe is item 11: strict appends (one entry each, at the expected head)
// through transcript-serve over loopback HTTP, against the same appends through
// a Go repository.Session held open by the caller; 1 and 16 clients, each on a
// session of its own. It reports appends per second and p50/p99 latency. Every
// request to the server is authenticated and finds its session in the server's
// cache of open sessions (read whole on the first request), whose handle reads
// the head before it appends, as the direct writer's handle, which its caller
// keeps between appends, does. Each side's appends run in serveRounds rounds,
// alternating with the other side's.
func runServe(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	store, err := e.newStore(e.bucket, "serve")
	if err != nil {
		return res, err
	}
	repos, err := repository.NewService(store, repository.Config{})
	if err != nil {
		return res, err
	}
	srv, err := server.New(server.Config{Repositories: repos, Auth: &server.JWTAuth{HMACKey: serveKey}})
	if err != nil {
		return res, err
	}
	defer srv.Close()
	url, stop, err := listen(srv.Handler())
	if err != nil {
		return res, err
	}
	defer stop()
	// The clients' connections are the item's own and closed with it, so that
	// none outlives the run (a keep-alive connection's goroutines would). Each
	// client keeps its connection between appends, as a client process would:
	// the default transport keeps 2 idle connections per host, so 14 of 16
	// clients would dial a new one for every append.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = slices.Max(serveClients)
	client := &http.Client{Transport: tr}
	defer client.CloseIdleConnections()
	total := max(e.cfg.Sizes.MirrorTurns, 5)
	for _, clients := range serveClients {
		perClient := max(total/clients, 5)
		direct, err := newLoad(ctx, clients, func(ctx context.Context, c int) (appender, error) {
			return directAppender(ctx, store, fmt.Sprintf("direct-%d-%d", clients, c))
		})
		if err != nil {
			return res, fmt.Errorf("direct, %d clients: %w", clients, err)
		}
		viaHTTP, err := newLoad(ctx, clients, func(ctx context.Context, c int) (appender, error) {
			return httpAppender(ctx, client, url, fmt.Sprintf("http-%d-%d", clients, c))
		})
		if err != nil {
			return res, fmt.Errorf("http, %d clients: %w", clients, err)
		}
		if err := interleave(ctx, perClient, serveRounds, direct, viaHTTP); err != nil {
			return res, fmt.Errorf("%d clients: %w", clients, err)
		}
		d, h := direct.result(), viaHTTP.result()
		note := fmt.Sprintf("%d clients × %d appends, in %d interleaved rounds", clients, perClient, min(serveRounds, perClient))
		e.logf("serve %s: %.0f appends/s (direct %.0f), p50 %.1f ms (direct %.1f), p99 %.1f ms (direct %.1f)",
			note, h.rate, d.rate, ms(h.p50), ms(d.p50), ms(h.p99), ms(d.p99))
		name := fmt.Sprintf("appends through transcript-serve, %d client(s)", clients)
		res.Rows = append(res.Rows,
			row(11, name+": throughput", "appends/s", h.rate, "Go repository", d.rate, true, note),
			row(11, name+": p50 latency", "ms", ms(h.p50), "Go repository", ms(d.p50), false, note),
			row(11, name+": p99 latency", "ms", ms(h.p99), "Go repository", ms(d.p99), false, note),
		)
	}
	return res, nil
}

// appender appends entry i of a client's chain at the expected head.
type appender func(ctx context.Context, i int) error

// serveRounds is how many rounds item 11 splits each side's appends into. The
// rounds of the direct writer and of the server alternate (direct first in even
// rounds, the server first in odd ones), so that a stall of the object store, or
// its slowing as the bucket fills, falls on both sides alike rather than deciding
// the row, as item 4 interleaves its readers.
const serveRounds = 5

// load is the appenders of one side of item 11, one per client, and what their
// appends took so far.
type load struct {
	apps    []appender
	next    int             // the next entry of every client's chain
	lat     []time.Duration // every append's latency
	elapsed time.Duration   // the rounds' wall time, summed
}

// loadResult is the figures of one load.
type loadResult struct {
	rate     float64
	p50, p99 time.Duration
}

// newLoad makes the appenders of clients clients.
func newLoad(ctx context.Context, clients int, newAppender func(ctx context.Context, c int) (appender, error)) (*load, error) {
	l := &load{apps: make([]appender, clients)}
	for c := range l.apps {
		a, err := newAppender(ctx, c)
		if err != nil {
			return nil, err
		}
		l.apps[c] = a
	}
	return l, nil
}

// interleave runs n appends per client on each of loads, in rounds that
// alternate between them (see serveRounds); the loads' order turns every round.
func interleave(ctx context.Context, n, rounds int, loads ...*load) error {
	rounds = max(1, min(rounds, n))
	for r := range rounds {
		k := n*(r+1)/rounds - n*r/rounds
		for j := range loads {
			l := loads[j]
			if r%2 == 1 {
				l = loads[len(loads)-1-j]
			}
			if err := l.round(ctx, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// round runs k appends on every client concurrently, each continuing its
// chain, and adds their latencies and the round's wall time to l.
func (l *load) round(ctx context.Context, k int) error {
	lat := make([][]time.Duration, len(l.apps))
	errs := make([]error, len(l.apps))
	var wg sync.WaitGroup
	start := time.Now()
	for c, app := range l.apps {
		wg.Go(func() {
			for i := l.next; i < l.next+k; i++ {
				d, err := timeIt(func() error { return app(ctx, i) })
				if err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], d)
			}
		})
	}
	wg.Wait()
	l.elapsed += time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.next += k
	for _, ds := range lat {
		l.lat = append(l.lat, ds...)
	}
	return nil
}

// result is the throughput of l's appends over its rounds' wall time, and the
// percentiles of their latencies.
func (l *load) result() loadResult {
	all := slices.Sorted(slices.Values(l.lat))
	if len(all) == 0 {
		return loadResult{}
	}
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	return loadResult{rate: float64(len(all)) / l.elapsed.Seconds(), p50: pct(0.50), p99: pct(0.99)}
}

// benchEntry is entry i of a chain: a user message whose parent is entry i-1.
func benchEntry(i int) []byte {
	parent := "null"
	if i > 0 {
		parent = fmt.Sprintf(`"m%06d"`, i-1)
	}
	return fmt.Appendf(nil, `{"type":"message","id":"m%06d","parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"turn %d of the bench session","timestamp":1}}`, i, parent, i)
}

func benchHead(i int) string {
	if i == 0 {
		return ""
	}
	return fmt.Sprintf("m%06d", i-1)
}

// directAppender creates a strict session through a repository and appends with
// AppendIf on the handle.
func directAppender(ctx context.Context, store *transcript.Store, user string) (appender, error) {
	repo, err := repository.New(store, repository.Owner{Tenant: "bench", User: user}, repository.Config{})
	if err != nil {
		return nil, err
	}
	sess, err := repo.Create(ctx, repository.CreateOptions{ID: "s", Strict: true})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, i int) error { return sess.AppendIf(ctx, benchHead(i), benchEntry(i)) }, nil
}

// httpAppender creates a session through the API and appends with POSTs sent by
// client.
func httpAppender(ctx context.Context, client *http.Client, base, user string) (appender, error) {
	tok, err := server.MintToken(serveKey, "bench", user, time.Now(), time.Hour)
	if err != nil {
		return nil, err
	}
	do := func(ctx context.Context, path string, body []byte, want int) error {
		req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, data)
		}
		return nil
	}
	if err := do(ctx, "/v1/sessions", []byte(`{"id":"s"}`), http.StatusCreated); err != nil {
		return nil, err
	}
	return func(ctx context.Context, i int) error {
		var head any
		if h := benchHead(i); h != "" {
			head = h
		}
		body, err := json.Marshal(map[string]any{"expectedHead": head, "entries": []json.RawMessage{benchEntry(i)}})
		if err != nil {
			return err
		}
		return do(ctx, "/v1/sessions/s/entries", body, http.StatusOK)
	}, nil
}

// listen serves h over HTTP on a loopback port of its own and returns its URL and
// the function that stops it.
func listen(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln) // ends with http.ErrServerClosed at stop
	}()
	return "http://" + ln.Addr().String(), func() {
		_ = hs.Close()
		<-done
	}, nil
}
