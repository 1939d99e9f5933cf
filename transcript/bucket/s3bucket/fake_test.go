package s3bucket_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// fakeS3 is just enough of S3 for one bucket "fakebucket": create-only PUT, HEAD with the
// checksum metadata, and injected 500 answers.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string]string // key → stored checksum metadata
	// failPuts answers the next PUTs with 500; storeFirst stores before failing
	// (the server did the work but the answer was lost).
	failPuts   int
	storeFirst bool
	puts       int
	heads      int
	// failHeads answers the next HEADs with 500.
	failHeads int
	// bodies are the contents GET serves (a key without one is missing to GET);
	// gets counts GETs.
	bodies map[string]string
	gets   int
	// notModified counts GETs answered 304 (If-None-Match naming the ETag);
	// ignoreIfNoneMatch makes GET ignore the header, as some servers may.
	notModified       int
	ignoreIfNoneMatch bool
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	key := strings.TrimPrefix(r.URL.Path, "/fakebucket/")
	switch {
	case r.URL.Path == "/fakebucket" || r.URL.Path == "/fakebucket/":
		w.WriteHeader(http.StatusOK) // the bucket exists
	case r.Method == http.MethodPut:
		f.puts++
		_, exists := f.objects[key]
		if exists && r.Header.Get("If-None-Match") == "*" {
			s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed", key)
			return
		}
		if f.failPuts > 0 {
			f.failPuts--
			if f.storeFirst {
				f.objects[key] = r.Header.Get("X-Amz-Meta-Transcript-Checksum")
			}
			s3Error(w, http.StatusInternalServerError, "InternalError", key)
			return
		}
		f.objects[key] = r.Header.Get("X-Amz-Meta-Transcript-Checksum")
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodHead:
		f.heads++
		if f.failHeads > 0 {
			f.failHeads--
			s3Error(w, http.StatusInternalServerError, "InternalError", key)
			return
		}
		sum, ok := f.objects[key]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("X-Amz-Meta-Transcript-Checksum", sum)
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodGet:
		f.gets++
		body, ok := f.bodies[key]
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey", key)
			return
		}
		w.Header().Set("X-Amz-Meta-Transcript-Checksum", f.objects[key])
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		if r.Header.Get("If-None-Match") == `"0123456789abcdef0123456789abcdef"` && !f.ignoreIfNoneMatch {
			f.notModified++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		status := http.StatusOK
		if rg := r.Header.Get("Range"); rg != "" {
			var from, to int
			if _, err := fmt.Sscanf(rg, "bytes=%d-%d", &from, &to); err != nil || from >= len(body) {
				s3Error(w, http.StatusRequestedRangeNotSatisfiable, "InvalidRange", key)
				return
			}
			body, status = body[from:min(to+1, len(body))], http.StatusPartialContent
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	default:
		s3Error(w, http.StatusNotImplemented, "NotImplemented", key)
	}
}

func s3Error(w http.ResponseWriter, status int, code, key string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><Key>%s</Key><BucketName>fakebucket</BucketName></Error>`,
		code, code, key)
}

func newFake(t *testing.T, f *fakeS3, retries int) *s3bucket.Bucket {
	return newFakeHandler(t, f, f, retries)
}

// newFakeHandler is newFake with the server's answers made by h (which may wrap f).
func newFakeHandler(t *testing.T, f *fakeS3, h http.Handler, retries int) *s3bucket.Bucket {
	t.Helper()
	if f.objects == nil {
		f.objects = map[string]string{}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b, err := s3bucket.New(t.Context(), s3bucket.Config{
		Endpoint:       strings.TrimPrefix(srv.URL, "http://"),
		Bucket:         "fakebucket",
		Region:         "us-east-1",
		AccessKey:      "test-access",
		SecretKey:      "test-secret",
		Insecure:       true,
		MaxRetries:     retries,
		RequestTimeout: 10 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBucket_PutRetries(t *testing.T) {
	data := []byte("hello")
	tests := []struct {
		name      string
		fake      *fakeS3
		retries   int
		checksum  string
		wantErr   error
		wantPuts  int
		wantHeads int
	}{
		{name: "500 then 200", fake: &fakeS3{failPuts: 1}, checksum: "c1", wantPuts: 2},
		{name: "lost answer, retry meets its own write", fake: &fakeS3{failPuts: 1, storeFirst: true},
			checksum: "c1", wantPuts: 2, wantHeads: 1},
		{name: "lost answer without checksum is a conflict", fake: &fakeS3{failPuts: 1, storeFirst: true},
			wantErr: bucket.ErrExists, wantPuts: 2, wantHeads: 1},
		{name: "existing object with other checksum", fake: &fakeS3{objects: map[string]string{"k/seg": "other"}},
			checksum: "c1", wantErr: bucket.ErrExists, wantPuts: 1, wantHeads: 1},
		{name: "existing object with same checksum", fake: &fakeS3{objects: map[string]string{"k/seg": "c1"}},
			checksum: "c1", wantPuts: 1, wantHeads: 1},
		{name: "no retries", fake: &fakeS3{failPuts: 1}, retries: -1, checksum: "c1", wantPuts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newFake(t, tt.fake, tt.retries)
			err := b.Put(t.Context(), "k/seg", bytes.NewReader(data), int64(len(data)),
				bucket.PutOptions{Checksum: tt.checksum})
			switch {
			case tt.retries < 0:
				require.Error(t, err)
				require.NotErrorIs(t, err, bucket.ErrExists)
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			default:
				require.NoError(t, err)
			}
			tt.fake.mu.Lock()
			defer tt.fake.mu.Unlock()
			require.Equal(t, tt.wantPuts, tt.fake.puts, "PUT requests")
			require.Equal(t, tt.wantHeads, tt.fake.heads, "HEAD requests")
		})
	}
}

// TestBucket_PutConflictCheckFails: after a 412, a failing checksum check is a
// transient error that callers retry, never a create-only conflict.
func TestBucket_PutConflictCheckFails(t *testing.T) {
	f := &fakeS3{objects: map[string]string{"k/seg": "c1"}, failHeads: 100}
	b := newFake(t, f, -1)
	data := []byte("hello")
	err := b.Put(t.Context(), "k/seg", bytes.NewReader(data), int64(len(data)), bucket.PutOptions{Checksum: "c1"})
	require.Error(t, err)
	require.NotErrorIs(t, err, bucket.ErrExists)

	f.mu.Lock()
	f.failHeads = 0
	f.mu.Unlock()
	require.NoError(t, b.Put(t.Context(), "k/seg", bytes.NewReader(data), int64(len(data)), bucket.PutOptions{Checksum: "c1"}),
		"once the check works, the retry is recognised as the same write")
}

// TestBucket_ReadsAreOneRequest: each read of an object is exactly one GET, with
// its metadata taken from that response (no HEAD before it, which would double
// the requests of every segment read and add a round trip).
func TestBucket_ReadsAreOneRequest(t *testing.T) {
	const key, body = "k/seg", "hello, segment"
	type readCase struct {
		name    string
		read    func(t *testing.T, b *s3bucket.Bucket) string
		want    string
		wantErr error
	}
	tests := []readCase{
		{name: "Get", want: body, read: func(t *testing.T, b *s3bucket.Bucket) string {
			rc, oi, err := b.Get(t.Context(), key)
			require.NoError(t, err)
			defer rc.Close()
			require.Equal(t, int64(len(body)), oi.Size)
			require.Equal(t, "c1", oi.Checksum)
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			return string(data)
		}},
		{name: "Get missing", wantErr: bucket.ErrNotFound, read: func(t *testing.T, b *s3bucket.Bucket) string {
			_, _, err := b.Get(t.Context(), "k/missing")
			require.ErrorIs(t, err, bucket.ErrNotFound)
			return ""
		}},
		{name: "GetRange", want: body[7:14], read: func(t *testing.T, b *s3bucket.Bucket) string {
			data, err := b.GetRange(t.Context(), key, 7, 7)
			require.NoError(t, err)
			return string(data)
		}},
		{name: "GetWithETag", want: body, read: func(t *testing.T, b *s3bucket.Bucket) string {
			data, etag, err := b.GetWithETag(t.Context(), key)
			require.NoError(t, err)
			require.Equal(t, "0123456789abcdef0123456789abcdef", etag)
			return string(data)
		}},
	}
	getIfChanged := func(held string, wantChanged bool) func(t *testing.T, b *s3bucket.Bucket) string {
		return func(t *testing.T, b *s3bucket.Bucket) string {
			data, etag, changed, err := b.GetIfChanged(t.Context(), key, held)
			require.NoError(t, err)
			require.Equal(t, wantChanged, changed)
			require.Equal(t, "0123456789abcdef0123456789abcdef", etag)
			return string(data)
		}
	}
	tests = append(tests,
		readCase{name: "GetIfChanged, the ETag held", want: "", read: getIfChanged("0123456789abcdef0123456789abcdef", false)},
		readCase{name: "GetIfChanged, another ETag held", want: body, read: getIfChanged("fedcba98765432100123456789abcdef", true)},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeS3{objects: map[string]string{key: "c1"}, bodies: map[string]string{key: body}}
			b := newFake(t, f, 0)
			require.Equal(t, tt.want, tt.read(t, b))
			f.mu.Lock()
			defer f.mu.Unlock()
			require.Equal(t, 1, f.gets, "GET requests")
			require.Zero(t, f.heads, "HEAD requests")
		})
	}
}

// GetIfChanged sends If-None-Match with the ETag held: a 304 is an unchanged
// object; from a server that ignores the header and sends the object, the
// ETag tells the same.
func TestBucket_GetIfChanged(t *testing.T) {
	const key, body = "k/head", "head bytes"
	const held = "0123456789abcdef0123456789abcdef"
	for _, ignores := range []bool{false, true} {
		t.Run(fmt.Sprintf("server ignores If-None-Match %v", ignores), func(t *testing.T) {
			f := &fakeS3{objects: map[string]string{key: "c1"}, bodies: map[string]string{key: body}, ignoreIfNoneMatch: ignores}
			b := newFake(t, f, 0)
			data, etag, changed, err := b.GetIfChanged(t.Context(), key, held)
			require.NoError(t, err)
			require.False(t, changed)
			require.Empty(t, data)
			require.Equal(t, held, etag)
			f.mu.Lock()
			defer f.mu.Unlock()
			require.Equal(t, 1, f.gets)
			if ignores {
				require.Zero(t, f.notModified)
			} else {
				require.Equal(t, 1, f.notModified, "answered 304, without the object")
			}
		})
	}
}

func TestBucket_StatMissing(t *testing.T) {
	b := newFake(t, &fakeS3{}, 0)
	_, err := b.Stat(t.Context(), "missing")
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func TestConfig_String(t *testing.T) {
	cfg := s3bucket.Config{Endpoint: "h:9000", Bucket: "b", AccessKey: "AKIAEXAMPLE", SecretKey: "very-secret"}
	for _, s := range []string{cfg.String(), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg)} {
		require.NotContains(t, s, "very-secret")
		require.NotContains(t, s, "AKIAEXAMPLE")
		require.Contains(t, s, "h:9000/b")
	}
}

func TestNew_Errors(t *testing.T) {
	_, err := s3bucket.New(t.Context(), s3bucket.Config{Bucket: "b"})
	require.ErrorContains(t, err, "endpoint")
	_, err = s3bucket.New(t.Context(), s3bucket.Config{Endpoint: "h:1"})
	require.ErrorContains(t, err, "bucket")

	// A server that refuses: the error names neither the secret nor the key id.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s3Error(w, http.StatusForbidden, "AccessDenied", "")
	}))
	defer srv.Close()
	b, err := s3bucket.New(t.Context(), s3bucket.Config{
		Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "fakebucket", Region: "us-east-1",
		AccessKey: "AKIAEXAMPLE", SecretKey: "very-secret", Insecure: true, MaxRetries: -1,
	})
	// A refusal may be a least-privilege role's (open succeeds); the first request
	// then fails.
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Stat(t.Context(), "k")
	require.ErrorIs(t, err, bucket.ErrAccessDenied)
	require.NotContains(t, err.Error(), "very-secret")
	require.NotContains(t, err.Error(), "AKIAEXAMPLE")
}

// TestNew_NoCheck: with NoCheck, New sends no request, so a process starts
// while the server cannot be reached (a replica whose outbox holds its turns
// until the store is back); the first request then fails as unavailable.
// Without it, New fails. NoCheck with Create is refused.
func TestNew_NoCheck(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := strings.TrimPrefix(srv.URL, "http://")
	srv.Close() // nothing answers there now
	cfg := s3bucket.Config{Endpoint: endpoint, Bucket: "fakebucket", Region: "us-east-1", Insecure: true,
		MaxRetries: -1, RequestTimeout: 2 * time.Second}

	_, err := s3bucket.New(t.Context(), cfg)
	require.ErrorIs(t, err, bucket.ErrUnavailable, "the check finds the server gone")

	cfg.NoCheck = true
	b, err := s3bucket.New(t.Context(), cfg)
	require.NoError(t, err, "no request, so nothing to fail")
	defer b.Close()
	_, err = b.Stat(t.Context(), "k")
	require.ErrorIs(t, err, bucket.ErrUnavailable)

	cfg.Create = true
	_, err = s3bucket.New(t.Context(), cfg)
	require.ErrorContains(t, err, "Create")
}

// TestBucket_NowIsTheServersClock: the bucket's clock is the server's (its Date
// header), not the client's, so a deletion delay measured on it cannot be shortened
// by a client whose clock runs ahead.
func TestBucket_NowIsTheServersClock(t *testing.T) {
	server := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	f := &fakeS3{}
	b := newFakeHandler(t, f, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", server.Format(http.TimeFormat))
		f.ServeHTTP(w, r)
	}), 0)
	now, err := b.Now(t.Context())
	require.NoError(t, err)
	require.False(t, now.Before(server), "%s", now)
	require.Less(t, now.Sub(server), time.Hour, "%s is the server's time plus the time since its answer", now)
}

// putRecorder records what each PUT sent, then lets f answer.
type putRecorder struct {
	f      *fakeS3
	mu     sync.Mutex
	shas   []string // X-Amz-Content-Sha256
	bodies [][]byte // the body as sent on the wire
}

func (p *putRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/fakebucket/") {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.shas = append(p.shas, r.Header.Get("X-Amz-Content-Sha256"))
		p.bodies = append(p.bodies, body)
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	p.f.ServeHTTP(w, r)
}

// TestBucket_SmallPutSignsItsPayload checks that a small body in memory goes out
// as itself with its SHA-256 in the signature, from the reader's current position,
// and that a large one still goes as minio-go's chunk-signed stream.
func TestBucket_SmallPutSignsItsPayload(t *testing.T) {
	small := []byte(`{"type":"message","id":"a1"}`)
	large := bytes.Repeat([]byte("x"), 1<<20+1)
	tests := []struct {
		name       string
		data       []byte
		skip       int64 // bytes of the reader consumed before Put
		wantSigned bool
	}{
		{name: "small", data: small, wantSigned: true},
		{name: "small, reader already advanced", data: small, skip: 9, wantSigned: true},
		{name: "over the limit", data: large},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeS3{}
			rec := &putRecorder{f: f}
			b := newFakeHandler(t, f, rec, 0)
			r := bytes.NewReader(tt.data)
			_, err := r.Seek(tt.skip, io.SeekStart)
			require.NoError(t, err)
			want := tt.data[tt.skip:]
			require.NoError(t, b.Put(t.Context(), "k/seg", r, int64(len(want)), bucket.PutOptions{Checksum: "c1"}))
			require.Len(t, rec.shas, 1)
			if !tt.wantSigned {
				require.True(t, strings.HasPrefix(rec.shas[0], "STREAMING-"), "header %q", rec.shas[0])
				return
			}
			sum := sha256.Sum256(want)
			require.Equal(t, hex.EncodeToString(sum[:]), rec.shas[0])
			require.Equal(t, want, rec.bodies[0], "the body is sent as itself")
		})
	}
}
