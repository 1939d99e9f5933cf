package server_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// BenchmarkServer_Append measures the server's append path alone: one POST of a
// batch of entries to a strict session, served by the handler in process over an
// in-memory bucket (no network, no S3), so that -benchmem shows what the server
// and the repository allocate per append. Sessions rotate every 64 appends so
// that each append's cost stays that of a short session.
func BenchmarkServer_Append(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
			require.NoError(b, err)
			repos, err := repository.NewService(store, repository.Config{})
			require.NoError(b, err)
			srv, err := server.New(server.Config{Repositories: repos, Auth: &server.JWTAuth{HMACKey: testKey},
				Logger: slog.New(slog.DiscardHandler)})
			require.NoError(b, err)
			b.Cleanup(srv.Close)
			h := srv.Handler()
			tok, err := server.MintToken(testKey, "t", "u", time.Now(), time.Hour)
			require.NoError(b, err)
			do := func(method, path string, body []byte) (int, []byte) {
				req := httptest.NewRequest(method, path, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec.Code, rec.Body.Bytes()
			}
			const appendsPerSession = 64
			text := string(bytes.Repeat([]byte("a benchmark turn of some length. "), 30))
			// bodies returns the append bodies of one session, built before the
			// timer runs: each batch continues the one before.
			bodies := func() [][]byte {
				out := make([][]byte, appendsPerSession)
				head := ""
				for a := range out {
					var body bytes.Buffer
					expected := "null"
					if head != "" {
						expected = fmt.Sprintf("%q", head)
					}
					fmt.Fprintf(&body, `{"expectedHead":%s,"entries":[`, expected)
					for k := range n {
						if k > 0 {
							body.WriteByte(',')
						}
						id := fmt.Sprintf("e%d-%d", a, k)
						body.Write(msg(id, head, "user", text))
						head = id
					}
					body.WriteString("]}")
					out[a] = body.Bytes()
				}
				return out
			}
			var sess string
			var batch [][]byte
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%appendsPerSession == 0 {
					b.StopTimer()
					sess, batch = fmt.Sprintf("s%d", i), bodies()
					code, body := do("POST", "/v1/sessions", fmt.Appendf(nil, `{"id":%q,"strict":true}`, sess))
					require.Equal(b, http.StatusCreated, code, string(body))
					b.StartTimer()
				}
				code, resp := do("POST", "/v1/sessions/"+sess+"/entries", batch[i%appendsPerSession])
				if code != http.StatusOK {
					b.Fatalf("append: %d %s", code, resp)
				}
			}
		})
	}
}
