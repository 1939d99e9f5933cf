// Package buckettest is the conformance suite every bucket.Bucket backend, and every
// wrapper of one, runs. Only tests import it.
//
// A backend's test calls Run with a constructor that returns a fresh, empty bucket for
// each subtest:
//
//	func TestBucket_Conformance(t *testing.T) {
//		buckettest.Run(t, func(t *testing.T) bucket.Bucket { return membucket.New() })
//	}
//
// The suite lives in a non-test file so that every backend, and every wrapper around
// one (prefixing, metrics, fault injection), runs the same cases.
package buckettest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Options describe the documented limits of a backend, so that the suite checks the
// contract the backend promises and no more. The zero value is the full contract.
type Options struct {
	// ChecksumNotStored reports that Stat, Get and List may return an empty
	// ObjectInfo.Checksum (the backend decides retries by comparing content).
	ChecksumNotStored bool
	// FileDirConflict reports that the backend cannot hold both "a/b" and "a/b/c"
	// (a file system); the suite then never creates such pairs.
	FileDirConflict bool
	// StaleEmptyPrefixes reports that a delimited listing may go on returning, for
	// a while, a common prefix whose keys were all deleted (SeaweedFS removes the
	// emptied directory asynchronously, two minutes or more later). The suite then
	// accepts such a prefix right after the delete; the recursive listing, and every
	// read, must still be exact.
	StaleEmptyPrefixes bool
}

// Run runs the whole conformance suite against the buckets newBucket returns.
// newBucket is called once per subtest and must return an empty bucket that no other
// subtest uses; it registers its own cleanup with t.Cleanup.
func Run(t *testing.T, newBucket func(t *testing.T) bucket.Bucket) {
	RunWithOptions(t, Options{}, newBucket)
}

// RunWithOptions is Run for a backend with the limits that opts declares.
func RunWithOptions(t *testing.T, opts Options, newBucket func(t *testing.T) bucket.Bucket) {
	s := suite{opts: opts, newBucket: newBucket}
	cases := []struct {
		name string
		fn   func(t *testing.T, b bucket.Bucket)
	}{
		{"MissingKey", s.missingKey},
		{"RoundTrip", s.roundTrip},
		{"EmptyObject", s.emptyObject},
		{"CreateOnlyConflict", s.createOnlyConflict},
		{"IdempotentRetry", s.idempotentRetry},
		{"ListLexical", s.listLexical},
		{"ListDelimited", s.listDelimited},
		{"ListFileAndDirectory", s.listFileAndDirectory},
		{"ListCallbackError", s.listCallbackError},
		{"DeleteVisibility", s.deleteVisibility},
		{"CancelledContext", s.cancelledContext},
		{"FailingReader", s.failingReader},
		{"ShortReader", s.shortReader},
		{"InvalidKey", s.invalidKey},
		{"LargeObject", s.largeObject},
		{"ConcurrentWriters", s.concurrentWriters},
		{"ConcurrentSameKey", s.concurrentSameKey},
		{"BatchDelete", s.batchDelete},
		{"ReadRange", s.readRange},
		{"ReadRangePastEnd", s.readRangePastEnd},
		{"Replace", s.replaceObject},
		{"ReplaceAtomic", s.replaceAtomic},
		{"Clock", s.clock},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newBucket(t))
		})
	}
	s.runConditional(t)
}

type suite struct {
	opts      Options
	newBucket func(t *testing.T) bucket.Bucket
}

// put stores data under key with a checksum derived from the content and fails the
// test on error.
func put(t *testing.T, b bucket.Bucket, key string, data []byte) {
	t.Helper()
	err := b.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{Checksum: sum(data)})
	require.NoError(t, err, "put %s", key)
}

// get reads key whole and fails the test on error.
func get(t *testing.T, b bucket.Reader, key string) []byte {
	t.Helper()
	rc, _, err := b.Get(t.Context(), key)
	require.NoError(t, err, "get %s", key)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err, "read %s", key)
	return data
}

// list returns the keys List reports for opts, with a trailing "/" on prefixes.
func list(t *testing.T, b bucket.Reader, opts bucket.ListOptions) []string {
	t.Helper()
	keys := []string{}
	err := b.List(t.Context(), opts, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	})
	require.NoError(t, err, "list %+v", opts)
	return keys
}

// requireAbsent checks that key is invisible to Get, Stat and List.
func requireAbsent(t *testing.T, b bucket.Bucket, key string) {
	t.Helper()
	_, err := b.Stat(t.Context(), key)
	require.ErrorIs(t, err, bucket.ErrNotFound, "stat %s", key)
	_, _, err = b.Get(t.Context(), key)
	require.ErrorIs(t, err, bucket.ErrNotFound, "get %s", key)
	require.NotContains(t, list(t, b, bucket.ListOptions{}), key)
}

// sum is a deterministic content checksum for tests (not a real hash: the suite
// only needs equal content to give equal strings and different content, different).
func sum(data []byte) string {
	var h uint64 = 14695981039346656037 // FNV-1a 64
	for _, c := range data {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return fmt.Sprintf("%016x-%d", h, len(data))
}

// ErrInjected is the error a FailingReader returns.
var ErrInjected = errors.New("buckettest: injected read failure")

// FailingReader returns a reader that yields the first n bytes of data and then fails
// with ErrInjected, to simulate a source that breaks half way through an upload.
func FailingReader(data []byte, n int) io.Reader {
	return io.MultiReader(bytes.NewReader(data[:n]), errReader{ErrInjected})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// cancelled returns a context that is already cancelled.
func cancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
