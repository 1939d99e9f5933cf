package s3bucket_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// pagingS3 answers ListObjectsV2 over a fixed set of keys as S3 does (max-keys,
// start-after, continuation tokens, 1,000 keys a page at most) and records each
// listing request's max-keys and start-after.
type pagingS3 struct {
	keys []string // sorted

	mu       sync.Mutex
	requests []string // "max-keys start-after", one per listing request
}

func (p *pagingS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.URL.Path != "/fakebucket/" && r.URL.Path != "/fakebucket" || q.Get("list-type") != "2" {
		w.WriteHeader(http.StatusOK) // the bucket exists
		return
	}
	p.mu.Lock()
	p.requests = append(p.requests, q.Get("max-keys")+" "+q.Get("start-after"))
	p.mu.Unlock()
	limit := 1000
	if n, err := strconv.Atoi(q.Get("max-keys")); err == nil && n > 0 && n < limit {
		limit = n
	}
	after := max(q.Get("start-after"), q.Get("continuation-token"))
	var page []string
	truncated := false
	for _, k := range p.keys {
		if !strings.HasPrefix(k, q.Get("prefix")) || k <= after {
			continue
		}
		if len(page) == limit {
			truncated = true
			break
		}
		page = append(page, k)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>fakebucket</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys><IsTruncated>%t</IsTruncated>`,
		q.Get("prefix"), len(page), limit, truncated)
	if truncated {
		fmt.Fprintf(&b, `<NextContinuationToken>%s</NextContinuationToken>`, page[len(page)-1])
	}
	for _, k := range page {
		fmt.Fprintf(&b, `<Contents><Key>%s</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>"e"</ETag><Size>1</Size><StorageClass>STANDARD</StorageClass></Contents>`, k)
	}
	b.WriteString(`</ListBucketResult>`)
	w.Header().Set("Content-Type", "application/xml")
	_, _ = w.Write([]byte(b.String()))
}

// TestBucket_ListFirstPage checks the requests a first page makes: one of its
// own for that many keys, then the rest after its last key in full pages, the
// keys the same as without it; and a caller that stops within the first page
// costs that one request.
func TestBucket_ListFirstPage(t *testing.T) {
	var keys []string
	for i := range 2500 {
		keys = append(keys, fmt.Sprintf("s/k%04d", i))
	}
	stop := errors.New("enough")
	tests := []struct {
		name      string
		opts      bucket.ListOptions
		stopAfter int // the callback stops after this many keys (0: never)
		want      []string
		requests  []string
	}{
		{name: "no first page", opts: bucket.ListOptions{Prefix: "s/"}, want: keys,
			requests: []string{" ", " ", " "}},
		{name: "first page of 32", opts: bucket.ListOptions{Prefix: "s/", FirstPage: 32}, want: keys,
			requests: []string{"32 ", " s/k0031", " s/k0031", " s/k0031"}},
		{name: "first page with start after", opts: bucket.ListOptions{Prefix: "s/", StartAfter: "s/k2399", FirstPage: 32},
			want: keys[2400:], requests: []string{"32 s/k2399", " s/k2431"}},
		{name: "first page holds the whole listing", opts: bucket.ListOptions{Prefix: "s/", StartAfter: "s/k2489", FirstPage: 32},
			want: keys[2490:], requests: []string{"32 s/k2489"}},
		{name: "stopped within the first page", opts: bucket.ListOptions{Prefix: "s/", FirstPage: 32}, stopAfter: 10,
			want: keys[:10], requests: []string{"32 "}},
		{name: "delimited ignores it", opts: bucket.ListOptions{Prefix: "s/", Delimited: true, FirstPage: 32}, want: keys,
			requests: []string{" ", " ", " "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &pagingS3{keys: keys}
			b := newFakeHandler(t, &fakeS3{}, fake, 0)
			var got []string
			err := b.List(t.Context(), tt.opts, func(oi bucket.ObjectInfo) error {
				got = append(got, oi.Key)
				if len(got) == tt.stopAfter {
					return stop
				}
				return nil
			})
			if tt.stopAfter > 0 {
				require.ErrorIs(t, err, stop)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.want, got)
			fake.mu.Lock()
			defer fake.mu.Unlock()
			require.Equal(t, tt.requests, slices.Clone(fake.requests))
		})
	}
}
