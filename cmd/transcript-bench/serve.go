package main

import (
	"bytes"
	"context"
	"encoding/json"
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
// session of its own. It reports appends per second and p50/p99 latency. The
// server is stateless: every request authenticates, opens the owner's repository
// and reads the session before appending, where the direct writer keeps its
// session handle (and what it has read) between appends.
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
	// none outlives the run (a keep-alive connection's goroutines would).
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()
	total := max(e.cfg.Sizes.MirrorTurns, 5)
	for _, clients := range serveClients {
		perClient := max(total/clients, 5)
		direct, err := appendLoad(ctx, clients, perClient, func(ctx context.Context, c int) (appender, error) {
			return directAppender(ctx, store, fmt.Sprintf("direct-%d-%d", clients, c))
		})
		if err != nil {
			return res, fmt.Errorf("direct, %d clients: %w", clients, err)
		}
		viaHTTP, err := appendLoad(ctx, clients, perClient, func(ctx context.Context, c int) (appender, error) {
			return httpAppender(ctx, client, url, fmt.Sprintf("http-%d-%d", clients, c))
		})
		if err != nil {
			return res, fmt.Errorf("http, %d clients: %w", clients, err)
		}
		note := fmt.Sprintf("%d clients × %d appends", clients, perClient)
		e.logf("serve %s: %.0f appends/s (direct %.0f), p50 %.1f ms (direct %.1f), p99 %.1f ms (direct %.1f)",
			note, viaHTTP.rate, direct.rate, ms(viaHTTP.p50), ms(direct.p50), ms(viaHTTP.p99), ms(direct.p99))
		name := fmt.Sprintf("appends through transcript-serve, %d client(s)", clients)
		res.Rows = append(res.Rows,
			row(11, name+": throughput", "appends/s", viaHTTP.rate, "Go repository", direct.rate, true, note),
			row(11, name+": p50 latency", "ms", ms(viaHTTP.p50), "Go repository", ms(direct.p50), false, note),
			row(11, name+": p99 latency", "ms", ms(viaHTTP.p99), "Go repository", ms(direct.p99), false, note),
		)
	}
	return res, nil
}

// appender appends entry i of a client's chain at the expected head.
type appender func(ctx context.Context, i int) error

// loadResult is the figures of one load.
type loadResult struct {
	rate     float64
	p50, p99 time.Duration
}

// appendLoad runs clients appenders of n appends each, concurrently, and measures
// every append.
func appendLoad(ctx context.Context, clients, n int, newAppender func(ctx context.Context, c int) (appender, error)) (loadResult, error) {
	apps := make([]appender, clients)
	for c := range apps {
		a, err := newAppender(ctx, c)
		if err != nil {
			return loadResult{}, err
		}
		apps[c] = a
	}
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range apps {
		wg.Go(func() {
			for i := range n {
				d, err := timeIt(func() error { return apps[c](ctx, i) })
				if err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], d)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for c := range lat {
		if errs[c] != nil {
			return loadResult{}, errs[c]
		}
		all = append(all, lat[c]...)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	return loadResult{rate: float64(len(all)) / elapsed.Seconds(), p50: pct(0.50), p99: pct(0.99)}, nil
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
