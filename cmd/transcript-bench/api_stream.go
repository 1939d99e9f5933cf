package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

// apiStream is item 17: one client appends through server A, one entry at a
// time, each after a random part of the watch interval (so that appends fall at
// every phase of the other server's poll); streams from A and from server B (on
// the same bucket) deliver each. From A the entry is delivered when the append
// commits, so its time is counted from the append's request and compared with
// the append's own round trip; from B it is counted from the append's answer and
// compared with half the watch interval (the expected wait for B's next poll).
func apiStream(ctx context.Context, e *env) ([]Row, error) {
	sz := e.cfg.Sizes
	a, err := newAPIEnv(e, "api-stream", "streamer")
	if err != nil {
		return nil, err
	}
	defer a.close()
	if err := writeChain(ctx, a.repo, "streamed", 1, 1); err != nil {
		return nil, err
	}
	urlA, stopA, err := a.serve(sz.StreamInterval)
	if err != nil {
		return nil, err
	}
	defer stopA()
	urlB, stopB, err := a.serve(sz.StreamInterval)
	if err != nil {
		return nil, err
	}
	defer stopB()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fromA, err := a.openStream(sctx, urlA, "streamed", 1)
	if err != nil {
		return nil, err
	}
	fromB, err := a.openStream(sctx, urlB, "streamed", 1)
	if err != nil {
		return nil, err
	}
	phase := rand.New(rand.NewPCG(17, 0x5e))
	var sameDs, otherDs, appendDs []time.Duration
	for i := 1; i <= sz.StreamAppends; i++ {
		select {
		case <-time.After(time.Duration(phase.Int64N(int64(sz.StreamInterval)))):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		sent := time.Now()
		if err := a.postEntry(ctx, urlA, "streamed", i); err != nil {
			return nil, err
		}
		answered := time.Now()
		atA, err := nextArrival(fromA)
		if err != nil {
			return nil, fmt.Errorf("stream from the same server: %w", err)
		}
		atB, err := nextArrival(fromB)
		if err != nil {
			return nil, fmt.Errorf("stream from another server: %w", err)
		}
		appendDs = append(appendDs, answered.Sub(sent))
		sameDs = append(sameDs, atA.Sub(sent))
		// The other server's watcher can deliver the entry before the appending
		// client has read its answer (a loaded machine): it then waited nothing
		// after the answer, not a negative time.
		otherDs = append(otherDs, max(0, atB.Sub(answered)))
	}
	for _, ds := range [][]time.Duration{appendDs, sameDs, otherDs} {
		slices.Sort(ds)
	}
	pct := func(ds []time.Duration, p float64) float64 { return ms(ds[min(len(ds)-1, int(p*float64(len(ds))))]) }
	e.logf("api stream: same server p50 %.1f ms p99 %.1f ms; other server p50 %.1f ms p99 %.1f ms (poll %v)",
		pct(sameDs, 0.5), pct(sameDs, 0.99), pct(otherDs, 0.5), pct(otherDs, 0.99), sz.StreamInterval)
	note := fmt.Sprintf("%d appends of one entry, each after a random part of the watch interval %v", sz.StreamAppends, sz.StreamInterval)
	half := ms(sz.StreamInterval / 2)
	return []Row{
		row(17, "append sent → delivered on a stream of the same server: p50", "ms", pct(sameDs, 0.5), "the append's round trip, p50", pct(appendDs, 0.5), false, note),
		row(17, "append sent → delivered on a stream of the same server: p99", "ms", pct(sameDs, 0.99), "the append's round trip, p99", pct(appendDs, 0.99), false, note),
		row(17, "append answered → delivered on a stream of another server: p50", "ms", pct(otherDs, 0.5), "half the watch interval", half, false, note),
		row(17, "append answered → delivered on a stream of another server: p99", "ms", pct(otherDs, 0.99), "half the watch interval", half, false, note),
	}, nil
}

// openStream opens the event stream of session id after sequence number after
// and returns the arrival times of its entries; the stream ends with ctx.
func (a *apiEnv) openStream(ctx context.Context, base, id string, after int) (<-chan time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/sessions/%s/events?after=%d", base, id, after), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("stream %s: %d", base, resp.StatusCode)
	}
	out := make(chan time.Time, 1024)
	go func() {
		defer resp.Body.Close()
		sseArrivals(resp.Body, out)
	}()
	return out, nil
}

// nextArrival waits for the next entry of a stream, for a minute at most.
func nextArrival(ch <-chan time.Time) (time.Time, error) {
	select {
	case at, ok := <-ch:
		if !ok {
			return time.Time{}, fmt.Errorf("the stream ended")
		}
		return at, nil
	case <-time.After(time.Minute):
		return time.Time{}, fmt.Errorf("nothing delivered within a minute")
	}
}

// postEntry appends entry i of the bench chain to session id through base.
func (a *apiEnv) postEntry(ctx context.Context, base, id string, i int) error {
	body, err := json.Marshal(map[string]any{"expectedHead": benchHead(i), "entries": []json.RawMessage{benchEntry(i)}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/sessions/"+id+"/entries", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("append %d: %d %s", i, resp.StatusCode, data)
	}
	return nil
}
