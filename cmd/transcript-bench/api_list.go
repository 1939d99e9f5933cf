package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// listMetaSize is the size of the baseline's small objects: about what a
// session's metadata takes as JSON.
const listMetaSize = 300

// apiList is item 16. The list is served by repository.ListPage, which reads
// each session's summary (a strict session's head carries it) and not the
// session, so its time should not grow with session length.
func apiList(ctx context.Context, e *env) ([]Row, error) {
	sz := e.cfg.Sizes
	// The baseline: as many small objects as sessions, listed once and fetched
	// 64 at a time.
	prefix := e.key("api-list-baseline") + "/"
	body := bytes.Repeat([]byte("m"), listMetaSize)
	for i := range sz.ListSessions {
		if err := e.bucket.Put(ctx, fmt.Sprintf("%s%06d.json", prefix, i), bytes.NewReader(body), int64(len(body)), bucket.PutOptions{}); err != nil {
			return nil, err
		}
	}
	baseline := func() error { return listAndGet(ctx, e.bucket, prefix, sz.ListSessions) }
	var rows []Row
	var first float64
	for _, n := range sz.ListEntries {
		a, err := newAPIEnv(e, fmt.Sprintf("api-list-%d", n), "lister")
		if err != nil {
			return nil, err
		}
		defer a.close()
		for s := range sz.ListSessions {
			if err := writeChain(ctx, a.repo, fmt.Sprintf("s%06d", s), n, n); err != nil {
				return nil, err
			}
		}
		url, stop, err := a.serve(0)
		if err != nil {
			return nil, err
		}
		defer stop()
		viaAPI := func() error { return listThroughAPI(ctx, a, url, sz.ListSessions) }
		ds, err := medians(sz.APIReadReps, viaAPI, baseline)
		if err != nil {
			return nil, err
		}
		e.logf("api list %d sessions of %d entries: %.1f ms (LIST + GETs %.1f ms)", sz.ListSessions, n, ms(ds[0]), ms(ds[1]))
		note := fmt.Sprintf("%d sessions of %d entries, every page of 1000; ListPage reads each session's head (its summary), not its entries; median of %d",
			sz.ListSessions, n, sz.APIReadReps)
		rows = append(rows, row(16, fmt.Sprintf("GET /v1/sessions, %d sessions of %d entries", sz.ListSessions, n), "ms",
			ms(ds[0]), fmt.Sprintf("one LIST + 64 parallel GETs of %d objects of %d B", sz.ListSessions, listMetaSize), ms(ds[1]), false, note))
		if first == 0 {
			first = ms(ds[0])
		} else {
			rows = append(rows, row(16, fmt.Sprintf("GET /v1/sessions: %d vs %d entries per session", n, sz.ListEntries[0]), "ms",
				ms(ds[0]), fmt.Sprintf("the same list at %d entries per session", sz.ListEntries[0]), first, false,
				"goal ≤ 1.2×: the list must not read sessions"))
		}
	}
	return rows, nil
}

// listAndGet lists the n objects under prefix and reads each, 64 at a time.
func listAndGet(ctx context.Context, b bucket.Bucket, prefix string, n int) error {
	keys, err := listKeys(ctx, b, prefix)
	if err != nil {
		return err
	}
	if len(keys) != n {
		return fmt.Errorf("baseline listing: %d objects, want %d", len(keys), n)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, k := range keys {
		g.Go(func() error { return getAll(gctx, b, k) })
	}
	return g.Wait()
}

// listThroughAPI reads every page of the owner's list, checking that it holds
// n sessions.
func listThroughAPI(ctx context.Context, a *apiEnv, base string, n int) error {
	got := 0
	for after, pages := "", 0; pages <= n; pages++ {
		var p struct {
			Sessions []struct{ ID string }
			Next     string
		}
		if err := a.get(ctx, base+"/v1/sessions?limit=1000&after="+url.QueryEscape(after), &p); err != nil {
			return err
		}
		got += len(p.Sessions)
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if got != n {
		return fmt.Errorf("API list: %d sessions, want %d", got, n)
	}
	return nil
}
