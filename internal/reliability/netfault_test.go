package reliability_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// startProxy runs an in-process toxiproxy on a free loopback port in front of
// upstream and stops it when the test ends.
func startProxy(t *testing.T, upstream string) *toxiproxy.Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "minio", "127.0.0.1:0", upstream)
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return p
}

// fault is one phase of the network fault schedule.
type fault struct {
	name  string
	start func()
	end   func()
}

// faultSchedule returns the faults of TestNetFaults, in order: connection resets,
// latency spikes, a bandwidth limit, a cut connection (timeout), an outage of
// several seconds, and a restart of MinIO.
func faultSchedule(t *testing.T, p *toxiproxy.Proxy, srv *minioServer, outage time.Duration) []fault {
	toxic := func(js string) func() {
		return func() {
			_, err := p.Toxics.AddToxicJson(strings.NewReader(js))
			require.NoError(t, err)
		}
	}
	remove := func(name string) func() {
		return func() { require.NoError(t, p.Toxics.RemoveToxic(context.Background(), name)) }
	}
	return []fault{
		{"reset_peer", toxic(`{"name":"reset","type":"reset_peer","stream":"upstream","toxicity":0.5,"attributes":{"timeout":20}}`), remove("reset")},
		{"latency_spike", toxic(`{"name":"slow","type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":1200,"jitter":800}}`), remove("slow")},
		{"bandwidth_16KBps", toxic(`{"name":"bw","type":"bandwidth","stream":"upstream","toxicity":1,"attributes":{"rate":16}}`), remove("bw")},
		{"timeout_cut", toxic(`{"name":"cut","type":"timeout","stream":"downstream","toxicity":0.5,"attributes":{"timeout":300}}`), remove("cut")},
		{"outage", func() { p.Stop() }, func() {
			time.Sleep(outage) // the phase itself is the first part of the outage
			require.NoError(t, p.Start())
		}},
		{"minio_restart", func() { srv.stop() }, func() { srv.start() }},
	}
}

// netWriter is one replica: its own Mirror and outbox, two sessions.
type netWriter struct {
	m     *mirror.Mirror
	trees []*sessiontree.Tree
	mu    sync.Mutex
	acked map[transcript.TranscriptRef][]string
}

// TestNetFaults: toxiproxy sits between every client and a
// MinIO of this test; four writers (each a replica with its own Mirror), a
// compaction job and two readers run while the network resets connections, slows
// down, cuts bandwidth and connections, goes away for seconds, and MinIO restarts.
// Afterwards every flushed entry is in the bucket, and every read that succeeded
// during the faults was a prefix-closed tree that held everything an earlier read
// of the same reader had seen.
func TestNetFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a MinIO of its own through several seconds of faults")
	}
	srv := startMinIO(t, t.TempDir())
	name := randomName("rel-net-")
	srv.srv.open(t, name, "", true, 10*time.Second, 0)
	p := startProxy(t, srv.srv.endpoint)
	// Every client goes through the proxy, with short timeouts and few retries so
	// that the faults reach the mirror's own retry loop.
	store := newStore(t, srv.srv.open(t, name, p.Listen, false, 2*time.Second, 1), "net")

	ctx := ctxTimeout(t, 3*time.Minute)
	const writers, sessionsPer = 4, 2
	var ws []*netWriter
	for i := range writers {
		w, err := transcript.NewWriter(fmt.Sprintf("net-w%d", i))
		require.NoError(t, err)
		m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: t.TempDir(),
			RequestTimeout: 2 * time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		nw := &netWriter{m: m, acked: map[transcript.TranscriptRef][]string{}}
		cfg := sessiontree.Config{Root: t.TempDir(), Uploader: m, NoSync: true}
		for s := range sessionsPer {
			tr, err := sessiontree.New(cfg, sessiontree.Identity{Namespace: "net"}, fmt.Sprintf("agent%d", i), fmt.Sprintf("s%d", s), sessiontree.HeaderOptions{})
			require.NoError(t, err)
			nw.trees = append(nw.trees, tr)
		}
		ws = append(ws, nw)
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = m.Close(cctx)
		})
	}
	var refs []transcript.TranscriptRef
	for _, w := range ws {
		for _, tr := range w.trees {
			refs = append(refs, tr.Ref())
		}
	}

	bg := newLoops()
	var flushes, compactions, compactErrs atomic.Int64
	var reads readStats
	for wi, w := range ws {
		bg.every(40*time.Millisecond, func(i int) error {
			tr := w.trees[i%len(w.trees)]
			var ids []string
			for k := range 1 + i%2 {
				e, err := tr.AppendMessage(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"w%d turn %d.%d"}`, wi, i, k)))
				if err != nil {
					return fmt.Errorf("append: %w", err)
				}
				ids = append(ids, e.ID())
			}
			if err := tr.Flush(ctx); err != nil {
				return fmt.Errorf("flush (must not wait on the network): %w", err)
			}
			w.mu.Lock()
			w.acked[tr.Ref()] = append(w.acked[tr.Ref()], ids...)
			w.mu.Unlock()
			flushes.Add(1)
			return nil
		})
	}
	// The compaction job.
	bg.every(10*time.Millisecond, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, 4*time.Second)
		_, err := store.Compact(cctx, refs[i%len(refs)], transcript.CompactOptions{MinSegments: 4, DeleteDelay: transcript.DeleteAtOnce})
		cancel()
		switch {
		case errors.Is(err, transcript.ErrCompactInput):
			return fmt.Errorf("compaction found a bad input: %w", err)
		case err != nil:
			if compactErrs.Add(1) <= 3 {
				t.Logf("compaction failed: %v", err)
			}
		default:
			compactions.Add(1)
		}
		return nil
	})
	// Two readers, each checking its reads against its own earlier ones.
	bg.every(20*time.Millisecond, checkedReader(t, ctx, store, refs, 4*time.Second, &reads))
	bg.every(20*time.Millisecond, checkedReader(t, ctx, store, append(slices.Clone(refs[1:]), refs[0]), 4*time.Second, &reads))

	faults := faultSchedule(t, p, srv, 3*time.Second)
	phase := 1500 * time.Millisecond
	time.Sleep(phase) // a healthy start
	for _, f := range faults {
		before := flushes.Load()
		rb, cb, fStart := reads.ok.Load()+reads.failed.Load(), compactions.Load()+compactErrs.Load(), time.Now()
		f.start()
		time.Sleep(phase)
		f.end()
		t.Logf("fault %s (%v): %d flushes, %d reads, %d compactions during it", f.name, time.Since(fStart).Round(time.Millisecond),
			flushes.Load()-before, reads.ok.Load()+reads.failed.Load()-rb, compactions.Load()+compactErrs.Load()-cb)
		time.Sleep(phase) // healthy again
	}
	require.NoError(t, bg.halt())
	drainStart := time.Now()

	var uploaded, failures uint64
	for _, w := range ws {
		require.NoError(t, w.m.AwaitQuiescence(ctx), "every flushed segment reaches the bucket once the faults end")
		st := w.m.Status()
		uploaded += st.Uploaded
		failures += st.Failures
		require.Zero(t, st.Quarantined)
	}
	t.Logf("outboxes drained %v after the last fault", time.Since(drainStart).Round(time.Millisecond))
	acked, compacted := 0, 0
	for _, w := range ws {
		for ref, ids := range w.acked {
			res, err := store.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.NoError(t, readConsistent(res, nil))
			got := entryIDs(res)
			for _, id := range ids {
				require.True(t, got[id], "flushed entry %s of %s lost", id, ref)
			}
			acked += len(ids)
			for _, seg := range res.Segments {
				if seg.Level > 0 {
					compacted++
				}
			}
		}
	}
	require.NotZero(t, failures, "the faults were felt")
	t.Logf("%d flushes (%d entries, lost 0), %d segments uploaded after %d failed attempts; %d compaction runs (%d failed by faults), %d compacted segments at the end; %d consistent reads (%d failed by faults)",
		flushes.Load(), acked, uploaded, failures, compactions.Load(), compactErrs.Load(), compacted, reads.ok.Load(), reads.failed.Load())
}
