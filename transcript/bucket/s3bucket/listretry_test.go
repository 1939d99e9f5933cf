package s3bucket_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// failingLists answers the first fail listing requests with status and code
// (or with body as a 200 when code is empty), then passes them to next.
type failingLists struct {
	next   http.Handler
	status int
	code   string
	body   string

	mu    sync.Mutex
	fail  int
	lists int
}

func (f *failingLists) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("list-type") == "2" {
		f.mu.Lock()
		f.lists++
		failing := f.fail > 0
		f.fail--
		f.mu.Unlock()
		if failing && f.code != "" {
			s3Error(w, f.status, f.code, "")
			return
		}
		if failing {
			_, _ = w.Write([]byte(f.body))
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// TestBucket_ListRetries: a listing request that fails as minio-go retries
// (a 500, a 503 SlowDown) is sent again, up to Config.MaxRetries times, and the
// listing goes on where it was; an answer that is not a listing, or a failure
// that is not retried, ends it at once, classified.
func TestBucket_ListRetries(t *testing.T) {
	var keys []string
	for i := range 1500 {
		keys = append(keys, fmt.Sprintf("s/k%04d", i))
	}
	tests := []struct {
		name     string
		status   int
		code     string
		body     string
		fail     int
		retries  int
		lists    int  // requests sent
		ok       bool // the listing completes
		sentinel error
	}{
		{name: "500 retried", status: http.StatusInternalServerError, code: "InternalError", fail: 2, retries: 3, lists: 4, ok: true},
		{name: "SlowDown retried", status: http.StatusServiceUnavailable, code: "SlowDown", fail: 1, retries: 1, lists: 3, ok: true},
		{name: "retries spent", status: http.StatusServiceUnavailable, code: "SlowDown", fail: 3, retries: 2, lists: 3, sentinel: bucket.ErrUnavailable},
		{name: "refusal not retried", status: http.StatusForbidden, code: "AccessDenied", fail: 1, retries: 3, lists: 1, sentinel: bucket.ErrAccessDenied},
		{name: "missing bucket not retried", status: http.StatusNotFound, code: "NoSuchBucket", fail: 1, retries: 3, lists: 1, sentinel: bucket.ErrNoBucket},
		{name: "not a listing", body: `<html>proxy error</html>`, fail: 1, retries: 3, lists: 1},
		{name: "a token answered with itself", fail: 1000, retries: 3, lists: 2,
			body: `<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken></ListBucketResult>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &failingLists{next: &pagingS3{keys: keys}, status: tt.status, code: tt.code, body: tt.body, fail: tt.fail}
			b := newFakeHandler(t, &fakeS3{}, fake, tt.retries)
			var got []string
			err := b.List(t.Context(), bucket.ListOptions{Prefix: "s/"}, func(oi bucket.ObjectInfo) error {
				got = append(got, oi.Key)
				return nil
			})
			fake.mu.Lock()
			defer fake.mu.Unlock()
			require.Equal(t, tt.lists, fake.lists, "listing requests")
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, keys, got)
				return
			}
			require.Error(t, err)
			require.Empty(t, got)
			if tt.sentinel != nil {
				require.ErrorIs(t, err, tt.sentinel)
			} else {
				require.True(t, strings.Contains(err.Error(), "read listing") || strings.Contains(err.Error(), "with itself"), "%v", err)
			}
		})
	}
}

// TestBucket_ListAnonymous: a bucket without credentials lists with unsigned
// requests (minio-go presigns nothing for it), on the bucket's path.
func TestBucket_ListAnonymous(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	var mu sync.Mutex
	var queries []string
	paging := &pagingS3{keys: []string{"p/a", "p/b", "q/c"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("list-type") == "2" {
			mu.Lock()
			queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
			mu.Unlock()
		}
		paging.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b, err := s3bucket.New(t.Context(), s3bucket.Config{
		Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "fakebucket", Region: "us-east-1", Insecure: true,
	})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	var got []string
	require.NoError(t, b.List(t.Context(), bucket.ListOptions{Prefix: "p/"}, func(oi bucket.ObjectInfo) error {
		got = append(got, oi.Key)
		return nil
	}))
	require.Equal(t, []string{"p/a", "p/b"}, got)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, queries, 1)
	require.True(t, strings.HasPrefix(queries[0], "/fakebucket/?"), queries[0])
	require.NotContains(t, queries[0], "X-Amz-Signature")
}

// TestBucket_ListErrorHidesSignature: a listing that cannot reach its server
// reports the bucket's path, not the signed URL of its request (a grant to list).
func TestBucket_ListErrorHidesSignature(t *testing.T) {
	b, srv := newAnswering(t, func(w http.ResponseWriter, r *http.Request) {})
	srv.Close()
	err := b.List(t.Context(), bucket.ListOptions{Prefix: "p/"}, func(bucket.ObjectInfo) error { return nil })
	require.ErrorIs(t, err, bucket.ErrUnavailable)
	require.Contains(t, err.Error(), "/fakebucket/")
	for _, secret := range []string{"X-Amz-Signature", "X-Amz-Credential", "test-access", "test-secret"} {
		require.NotContains(t, err.Error(), secret)
	}
}

// TestBucket_ListEmptyTruncatedFirstPage: a first page answered as truncated
// but without keys goes on with its continuation token, as later pages do.
func TestBucket_ListEmptyTruncatedFirstPage(t *testing.T) {
	var keys []string
	for i := range 50 {
		keys = append(keys, fmt.Sprintf("s/k%04d", i))
	}
	paging := &pagingS3{keys: keys}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Get("list-type") == "2" && q.Get("max-keys") == "32" {
			_, _ = w.Write([]byte(`<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>s/k0009</NextContinuationToken></ListBucketResult>`))
			return
		}
		paging.ServeHTTP(w, r)
	})
	b := newFakeHandler(t, &fakeS3{}, h, 0)
	var got []string
	require.NoError(t, b.List(t.Context(), bucket.ListOptions{Prefix: "s/", FirstPage: 32}, func(oi bucket.ObjectInfo) error {
		got = append(got, oi.Key)
		return nil
	}))
	require.Equal(t, keys[10:], got)
	paging.mu.Lock()
	defer paging.mu.Unlock()
	require.Equal(t, []string{" "}, paging.requests, "one full page after the token, without max-keys")
}
