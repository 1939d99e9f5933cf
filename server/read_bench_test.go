package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/benchkit"
	"github.com/transcriptstore/transcript/internal/rusage"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
	"github.com/transcriptstore/transcript/transcript/bucket/metricbucket"
)

// benchChainEntry is entry i of the chain the read benchmarks write (the
// entries of transcript-bench's item 15).
func benchChainEntry(i int) []byte {
	parent := "null"
	if i > 0 {
		parent = fmt.Sprintf(`"m%06d"`, i-1)
	}
	return fmt.Appendf(nil, `{"type":"message","id":"m%06d","parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"turn %d of the bench session","timestamp":1}}`, i, parent, i)
}

// writeBenchChain writes strict session id of n entries, a segment of pageSize
// entries per append, through repo.
func writeBenchChain(b *testing.B, repo *repository.Repository, id string, n, pageSize int) {
	b.Helper()
	s, err := repo.Create(b.Context(), repository.CreateOptions{ID: id, Cwd: "/bench", Strict: true})
	require.NoError(b, err)
	head := ""
	for from := 0; from < n; from += pageSize {
		raws := make([][]byte, 0, pageSize)
		for i := from; i < min(n, from+pageSize); i++ {
			raws = append(raws, benchChainEntry(i))
		}
		require.NoError(b, s.AppendIf(b.Context(), head, raws...))
		head = fmt.Sprintf("m%06d", min(n, from+pageSize)-1)
	}
}

// requestCounter counts the requests made to a bucket it wraps.
type requestCounter struct {
	reg *prometheus.Registry
	b   bucket.Bucket
}

func newRequestCounter(b testing.TB, inner bucket.Bucket) *requestCounter {
	reg := prometheus.NewRegistry()
	m, err := metricbucket.NewMetrics(reg)
	require.NoError(b, err)
	return &requestCounter{reg: reg, b: m.Wrap(inner, "bench")}
}

func (c *requestCounter) count(b testing.TB) float64 {
	mfs, err := c.reg.Gather()
	require.NoError(b, err)
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() == metricbucket.MetricRequests {
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// BenchmarkPagedRead reads a strict session of n entries as the TypeScript
// adapter does (GET /v1/sessions/{id}?entries=N, the metadata with the first
// page, then every page of the server's largest size until one reaches its
// entryCount: benchkit.ReadPaged, the bench's read)
// from a server that has not served it, against
// Store.ReadAll of the same session, on an in-memory bucket: the CPU side of
// transcript-bench's item 15 (its bucket round trips are reported as
// requests/op) and its CPU time, client and server, as cpu-ns/op (steadier than
// ns/op on a shared machine). Sub-benchmarks alternate when run with -count.
func BenchmarkPagedRead(b *testing.B) {
	for _, n := range []int{1_000, 20_000} {
		cb := newRequestCounter(b, membucket.New())
		store, err := transcript.New(transcript.Config{Bucket: cb.b})
		require.NoError(b, err)
		repos, err := repository.NewService(store, repository.Config{})
		require.NoError(b, err)
		repo, err := repos.Repository(repository.Owner{Tenant: "acme", User: "alice"})
		require.NoError(b, err)
		id := fmt.Sprintf("read-%d", n)
		writeBenchChain(b, repo, id, n, 1000) // segments of 1,000, as item 15's
		token, err := server.MintToken(testKey, "acme", "alice", time.Now(), time.Hour)
		require.NoError(b, err)
		// The API read's client decodes each page with encoding/json, or splits it
		// into its entries by one scan of its fields (the bench's client), as
		// Store.ReadAll scans each stored entry once.
		for _, c := range []struct {
			name   string
			decode benchkit.PageDecoder
		}{{"json", benchkit.DecodePage}, {"scan", benchkit.ScanPage}} {
			b.Run(fmt.Sprintf("n=%d/api-%s", n, c.name), func(b *testing.B) {
				before, cpu := cb.count(b), time.Duration(0)
				for b.Loop() {
					b.StopTimer()
					srv, err := server.New(server.Config{Repositories: repos, Auth: &server.JWTAuth{HMACKey: testKey}})
					require.NoError(b, err)
					hs := httptest.NewServer(srv.Handler())
					b.StartTimer()
					c0 := processCPU(b)
					got, err := benchkit.ReadPaged(b.Context(), http.DefaultClient, hs.URL, token, id, c.decode)
					require.NoError(b, err)
					require.Equal(b, n, got)
					cpu += processCPU(b) - c0
					b.StopTimer()
					hs.Close()
					srv.Close()
					b.StartTimer()
				}
				b.ReportMetric((cb.count(b)-before)/float64(b.N), "requests/op")
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			})
		}
		b.Run(fmt.Sprintf("n=%d/direct", n), func(b *testing.B) {
			ref := transcript.TranscriptRef{Namespace: repo.Namespace(), AgentID: repository.DefaultAgentID, SessionID: id}
			before, c0 := cb.count(b), processCPU(b)
			for b.Loop() {
				m, err := store.ReadAll(b.Context(), ref)
				require.NoError(b, err)
				require.Len(b, m.Raw(), n+1) // the header and the entries
			}
			b.ReportMetric((cb.count(b)-before)/float64(b.N), "requests/op")
			b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N), "cpu-ns/op")
		})
		require.NoError(b, repo.Close())
		require.NoError(b, store.Close())
	}
}

// processCPU is the CPU time the process has used (user and system): on a
// shared machine a steadier measure than the wall clock.
func processCPU(b *testing.B) time.Duration {
	d, err := rusage.SelfCPU()
	require.NoError(b, err)
	return d
}
