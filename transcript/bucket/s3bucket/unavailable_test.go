package s3bucket_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// S3's own 503 answers (SlowDown, ServiceUnavailable), a server that cannot be
// reached and one that does not answer within the request timeout all reach the
// caller as bucket.ErrUnavailable (what the server answers 503 to); other
// failures (a 500, a missing key, an ended context) do not.
func TestBucket_Unavailable(t *testing.T) {
	answer := func(status int, code string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			s3Error(w, status, code, strings.TrimPrefix(r.URL.Path, "/fakebucket/"))
		}
	}
	stall := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Second): // past the request timeout
		}
	}
	cases := []struct {
		name        string
		h           http.HandlerFunc
		down        bool // the server is gone before the request
		unavailable bool
	}{
		{name: "SlowDown", h: answer(http.StatusServiceUnavailable, "SlowDown"), unavailable: true},
		{name: "ServiceUnavailable", h: answer(http.StatusServiceUnavailable, "ServiceUnavailable"), unavailable: true},
		{name: "503 of another code", h: answer(http.StatusServiceUnavailable, "Busy"), unavailable: true},
		{name: "unreachable", h: answer(http.StatusNotFound, "NoSuchKey"), down: true, unavailable: true},
		{name: "request timeout", h: stall, unavailable: true},
		{name: "InternalError", h: answer(http.StatusInternalServerError, "InternalError")},
		{name: "NoSuchKey", h: answer(http.StatusNotFound, "NoSuchKey")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, srv := newAnswering(t, tc.h)
			if tc.down {
				srv.Close()
			}
			calls := map[string]func(ctx context.Context) error{
				"Stat":        func(ctx context.Context) error { _, err := b.Stat(ctx, "k"); return err },
				"GetWithETag": func(ctx context.Context) error { _, _, err := b.GetWithETag(ctx, "k"); return err },
				"Put": func(ctx context.Context) error {
					return b.Put(ctx, "k", strings.NewReader("x"), 1, bucket.PutOptions{})
				},
				"List": func(ctx context.Context) error {
					return b.List(ctx, bucket.ListOptions{Prefix: "p/"}, func(bucket.ObjectInfo) error { return nil })
				},
			}
			for name, call := range calls {
				err := call(t.Context())
				require.Error(t, err, name)
				require.Equal(t, tc.unavailable, errors.Is(err, bucket.ErrUnavailable), "%s: %v", name, err)
			}
		})
	}
	t.Run("ended context", func(t *testing.T) {
		b, _ := newAnswering(t, stall)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := b.Stat(ctx, "k")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, bucket.ErrUnavailable, "the caller's own deadline is not the bucket's fault")
	})
}

// newAnswering returns a bucket over a server that says the bucket exists (to
// HEAD) and answers every other request with h, with no retries and a short request
// timeout, and the server.
func newAnswering(t *testing.T, h http.HandlerFunc) (*s3bucket.Bucket, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && (r.URL.Path == "/fakebucket" || r.URL.Path == "/fakebucket/") {
			w.WriteHeader(http.StatusOK) // the bucket exists
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	b, err := s3bucket.New(t.Context(), s3bucket.Config{
		Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "fakebucket", Region: "us-east-1",
		AccessKey: "test-access", SecretKey: "test-secret", Insecure: true,
		MaxRetries: -1, RequestTimeout: 300 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b, srv
}
