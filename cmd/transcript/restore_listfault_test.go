package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
)

// deniesLaterPages is a proxy in front of an S3 server that refuses (403, which
// no client retries) every recursive listing request that goes on from a key or
// a token: the second and later pages of a listing of keys (not of folders).
func deniesLaterPages(t *testing.T, endpoint string) string {
	t.Helper()
	target, err := url.Parse("http://" + endpoint)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method == http.MethodGet && q.Get("list-type") == "2" && q.Get("delimiter") == "" && (q.Get("continuation-token") != "" || q.Get("start-after") != "") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied.</Message></Error>`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestRestore_StoreFailsMidListing: a restore whose listing of the namespace
// fails after its first page (the S3 server stops answering, or refuses) has
// restored some sessions and never heard of the others. It exits 1 saying the
// restore is incomplete and how far it got, in text and in --json, as an
// interrupted restore does; it used to print the store's error alone, and
// nothing on stdout with --json.
func TestRestore_StoreFailsMidListing(t *testing.T) {
	endpoint, _, _ := s3test.S3Endpoint(t)
	name := fmt.Sprintf("transcript-cli-listfault-%d-%d", os.Getpid(), time.Now().UnixNano())
	store := fmt.Sprintf("s3://%s/p?endpoint=%s&insecure=true&create=true", name, endpoint)
	s := openStoreAt(t, store)
	w, err := transcript.NewWriter("test-writer")
	require.NoError(t, err)
	// More sessions of one segment each than one listing page holds (1,000).
	const sessions = 1010
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	sem := make(chan struct{}, 16)
	for i := range sessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: fmt.Sprintf("s%04d", i)}
			header := fmt.Sprintf(`{"type":"session","version":3,"id":"h%04d","timestamp":"2026-09-25T22:28:55.488Z","cwd":"/"}`, i)
			_, err := s.AppendSegment(t.Context(), ref, [][]byte{[]byte(header), []byte(entryLine("e1", ""))}, w)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	faulty := fmt.Sprintf("s3://%s/p?endpoint=%s&insecure=true&timeout=5s", name, deniesLaterPages(t, endpoint))
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			args := []string{"restore", "--store", faulty, "--out", t.TempDir()}
			if asJSON {
				args = append(args, "--json")
			}
			r := cli(t, args...)
			require.Equal(t, 1, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, "Error: restore interrupted after ")
			require.Contains(t, r.stderr, "access denied")
			if asJSON {
				var sum restoreSummary
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout)
				require.True(t, sum.Interrupted)
				require.Less(t, sum.Restored, sessions)
				return
			}
			require.Regexp(t, `^interrupted: restored \d+, skipped 0 \(identical\), failed 0 of \d+ sessions`, r.stdout)
		})
	}
}
