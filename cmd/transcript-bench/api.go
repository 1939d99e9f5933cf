package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/internal/benchkit"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
)

// Items 15–17 measure transcript-serve's reads, list and event streams, each
// against what the same work costs without the server, in the same run:
//
//   - 15: reading a session through the API as the TypeScript adapter does (its
//     metadata with the first page, then every further page of the server's
//     largest size) on a server that
//     has not served it before, against Store.ReadAll of the same session.
//   - 16: GET /v1/sessions of an owner with ListSessions sessions (every page),
//     against one LIST plus parallel GETs of as many small objects (the size of
//     a session's metadata); at each of ListEntries entries per session, so
//     that the rows show whether the list's time grows with session length.
//   - 17: an entry appended through the API → delivered on an open event stream,
//     from the same server (against the append's own round trip) and from
//     another server on the same bucket (against half its watch interval).

// apiSegmentEntries is how many entries each segment of item 15's sessions
// holds (one append each).
const apiSegmentEntries = 1000

// apiEnv is a server over one store and a client of it as one owner.
type apiEnv struct {
	store  *transcript.Store
	repos  *repository.Service
	repo   *repository.Repository
	client *http.Client
	token  string
}

// newAPIEnv opens a store under the run's prefix sub and a repository of the
// bench owner user in it.
func newAPIEnv(e *env, sub, user string) (*apiEnv, error) {
	store, err := e.newStore(e.bucket, sub)
	if err != nil {
		return nil, err
	}
	repos, err := repository.NewService(store, repository.Config{AgentID: "bench"})
	if err != nil {
		return nil, err
	}
	repo, err := repos.Repository(repository.Owner{Tenant: "bench", User: user})
	if err != nil {
		return nil, err
	}
	tok, err := server.MintToken(serveKey, "bench", user, time.Now(), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	return &apiEnv{store: store, repos: repos, repo: repo, client: client, token: tok}, nil
}

func (a *apiEnv) close() {
	a.client.CloseIdleConnections()
	_ = a.repo.Close()
	_ = a.store.Close()
}

// serve starts a server of a's repositories (watching every interval) and
// returns its URL and the function that stops it.
func (a *apiEnv) serve(interval time.Duration) (string, func(), error) {
	srv, err := server.New(server.Config{Repositories: a.repos, Auth: &server.JWTAuth{HMACKey: serveKey}, WatchInterval: interval})
	if err != nil {
		return "", nil, err
	}
	url, stop, err := listen(srv.Handler())
	if err != nil {
		srv.Close()
		return "", nil, err
	}
	return url, func() {
		srv.EndStreams()
		stop()
		srv.Close()
	}, nil
}

// get sends GET url with a's token and decodes the JSON answer into v.
func (a *apiEnv) get(ctx context.Context, url string, v any) error {
	data, err := benchkit.GetBody(ctx, a.client, url, a.token)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// writeChain creates strict session id holding entries 0..n-1 of the bench chain,
// appended batch entries at a time (one segment each).
func writeChain(ctx context.Context, repo *repository.Repository, id string, n, batch int) error {
	s, err := repo.Create(ctx, repository.CreateOptions{ID: id, Cwd: "/bench", Strict: true})
	if err != nil {
		return err
	}
	batch = max(batch, 1)
	for from := 0; from < n; from += batch {
		raws := make([][]byte, 0, batch)
		for i := from; i < min(n, from+batch); i++ {
			raws = append(raws, benchEntry(i))
		}
		if err := s.AppendIf(ctx, benchHead(from), raws...); err != nil {
			return fmt.Errorf("session %s at %d: %w", id, from, err)
		}
	}
	return nil
}

// runAPI is the group of items 15, 16 and 17.
func runAPI(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	for i, item := range []func(context.Context, *env) ([]Row, error){apiRead, apiList, apiStream} {
		if n := 15 + i; len(e.cfg.Items) > 0 && !slices.Contains(e.cfg.Items, n) {
			continue // not selected
		}
		rows, err := item(ctx, e)
		if err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, rows...)
	}
	return res, nil
}

// apiRead is item 15.
func apiRead(ctx context.Context, e *env) ([]Row, error) {
	sz := e.cfg.Sizes
	a, err := newAPIEnv(e, "api-read", "reader")
	if err != nil {
		return nil, err
	}
	defer a.close()
	var rows []Row
	for _, n := range sz.APIReadEntries {
		id := fmt.Sprintf("read-%d", n)
		if err := writeChain(ctx, a.repo, id, n, apiSegmentEntries); err != nil {
			return nil, err
		}
		ref := transcript.TranscriptRef{Namespace: a.repo.Namespace(), AgentID: "bench", SessionID: id}
		direct := func() error {
			m, err := a.store.ReadAll(ctx, ref)
			if err == nil && len(m.Raw()) < n {
				err = fmt.Errorf("direct read of %s: %d entries, want %d", id, len(m.Raw()), n)
			}
			return err
		}
		// Each API read is a server's first read of the session: a server of its
		// own, started before the clock does (the warm-up's and each rep's).
		urls := make([]string, sz.APIReadReps+1)
		for k := range urls {
			url, stop, err := a.serve(server.DefaultWatchInterval)
			if err != nil {
				return nil, err
			}
			defer stop()
			urls[k] = url
		}
		next := 0
		viaAPI := func() error {
			next++
			return readThroughAPI(ctx, a, urls[next-1], id, n)
		}
		ds, err := medians(sz.APIReadReps, viaAPI, direct)
		if err != nil {
			return nil, err
		}
		note := fmt.Sprintf("strict session of %d segments of %d entries; metadata with the first page, then the further pages (each at most %d entries and %d MiB), on a server that had not read it; median of %d",
			(n+apiSegmentEntries-1)/apiSegmentEntries, apiSegmentEntries, server.DefaultMaxPage, server.DefaultMaxPageBytes>>20, sz.APIReadReps)
		e.logf("api read %d entries: %.1f ms (Store.ReadAll %.1f ms)", n, ms(ds[0]), ms(ds[1]))
		rows = append(rows, row(15, fmt.Sprintf("read a %d-entry session through the API (open + every page)", n), "ms",
			ms(ds[0]), "Store.ReadAll of the same session", ms(ds[1]), false, note))
	}
	return rows, nil
}

// readThroughAPI reads session id as the adapter does: its metadata, then every
// page, checking that it got n entries. Each page is split into its entries
// with one scan of its fields (benchkit.ScanPage), as Store.ReadAll scans each
// stored entry once; encoding/json would scan every entry twice more and copy
// it, which measures Go's decoder rather than the server (the TypeScript
// adapter parses a page with JSON.parse).
func readThroughAPI(ctx context.Context, a *apiEnv, url, id string, n int) error {
	got, err := benchkit.ReadPaged(ctx, a.client, url, a.token, id, benchkit.ScanPage)
	if err != nil {
		return fmt.Errorf("API read of %s: %w", id, err)
	}
	if got != n {
		return fmt.Errorf("API read of %s: %d entries, want %d", id, got, n)
	}
	return nil
}

// sseArrivals reads the entry events of an event stream and sends the time each
// arrived, until the body ends.
func sseArrivals(body io.Reader, out chan<- time.Time) {
	defer close(out)
	r := bufio.NewReader(body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if strings.HasPrefix(line, "data: ") {
			out <- time.Now()
		}
	}
}
