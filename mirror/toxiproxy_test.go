package mirror_test

import (
	"context"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/mirror"
)

// startProxy runs an in-process toxiproxy on a random local port in front of the S3
// test server and stops it when the test ends.
func startProxy(t *testing.T) *toxiproxy.Proxy {
	t.Helper()
	endpoint, _, _ := s3test.S3Endpoint(t)
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "minio", "127.0.0.1:0", endpoint)
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return p
}

func addToxic(t *testing.T, p *toxiproxy.Proxy, js string) {
	t.Helper()
	_, err := p.Toxics.AddToxicJson(strings.NewReader(js))
	require.NoError(t, err)
}

// TestMirror_Toxiproxy puts toxiproxy between the mirror and MinIO, flushes before,
// during and after a network fault, and checks that once the fault ends every flushed
// entry is in the bucket exactly once.
func TestMirror_Toxiproxy(t *testing.T) {
	for _, sc := range []struct {
		name  string
		start func(t *testing.T, p *toxiproxy.Proxy)
		end   func(t *testing.T, p *toxiproxy.Proxy)
	}{
		{
			name: "reset_peer",
			start: func(t *testing.T, p *toxiproxy.Proxy) {
				addToxic(t, p, `{"name":"reset","type":"reset_peer","stream":"upstream","toxicity":1,"attributes":{"timeout":0}}`)
			},
			end: func(t *testing.T, p *toxiproxy.Proxy) {
				require.NoError(t, p.Toxics.RemoveToxic(context.Background(), "reset"))
			},
		},
		{
			// Latency above the mirror's request timeout: every PUT times out.
			name: "latency",
			start: func(t *testing.T, p *toxiproxy.Proxy) {
				addToxic(t, p, `{"name":"slow","type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":1500,"jitter":300}}`)
			},
			end: func(t *testing.T, p *toxiproxy.Proxy) {
				require.NoError(t, p.Toxics.RemoveToxic(context.Background(), "slow"))
			},
		},
		{
			// The server is unreachable: connections are refused.
			name:  "down",
			start: func(t *testing.T, p *toxiproxy.Proxy) { p.Stop() },
			end:   func(t *testing.T, p *toxiproxy.Proxy) { require.NoError(t, p.Start()) },
		},
	} {
		t.Run(sc.name, func(t *testing.T) {
			name := newS3TestBucket(t)
			p := startProxy(t)
			b := newS3Client(t, name, s3Options{endpoint: p.Listen, timeout: time.Second, maxRetries: 1})
			store := newStore(t, b, "toxi")
			m := newMirror(t, store, "", func(c *mirror.Config) {
				c.RequestTimeout = time.Second
				c.MinBackoff, c.MaxBackoff = 20*time.Millisecond, 300*time.Millisecond
			})
			ctx := ctxTimeout(t, 2*time.Minute)
			sessions := []*session{newSession("toxi", "s1"), newSession("toxi", "s2")}
			flush := func(n int) {
				for i := range n {
					require.NoError(t, m.Upload(ctx, sessions[i%2].batch(1+i%3)))
				}
			}
			flush(6)
			require.NoError(t, m.AwaitQuiescence(ctx))

			sc.start(t, p)
			faultEnd := time.Now().Add(3 * time.Second)
			for time.Now().Before(faultEnd) {
				flush(2) // the agent keeps flushing; Upload never waits on the store
				time.Sleep(100 * time.Millisecond)
			}
			during := m.Status()
			require.NotZero(t, during.Pending, "the fault held uploads back")
			sc.end(t, p)
			flush(6)

			require.NoError(t, m.AwaitQuiescence(ctx))
			st := m.Status()
			require.NotZero(t, st.Failures, "the fault was felt")
			require.NotZero(t, st.Retries)
			require.Zero(t, st.Quarantined)
			for _, s := range sessions {
				requireStored(t, store, s.ref, s.ids)
			}
			t.Logf("%s: %d segments uploaded, %d failures, %d retries, pending at the end of the fault %d; last error %q",
				sc.name, st.Uploaded, st.Failures, st.Retries, during.Pending, st.LastError)
			require.NoError(t, m.Close(ctx))
		})
	}
}
