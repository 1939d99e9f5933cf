package buckettest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// conditionalCases are the cases of bucket.Conditional, what a strict session
// builds on. RunWithOptions runs them as subtests of "Conditional".
func (s suite) conditionalCases() []namedCase {
	return []namedCase{
		{"CreateIfNoneMatch", s.condCreate},
		{"IfNoneMatchExisting", s.condIfNoneMatchExisting},
		{"IfMatchReplaces", s.condIfMatchReplaces},
		{"StaleETag", s.condStaleETag},
		{"IfMatchMissing", s.condIfMatchMissing},
		{"PutObjectETag", s.condPutObjectETag},
		{"InvalidCond", s.condInvalid},
		{"GetMissing", s.condGetMissing},
		{"FailingReader", s.condFailingReader},
		{"CancelledContext", s.condCancelled},
		{"OrdinaryObject", s.condOrdinaryObject},
		{"RaceIfMatch", s.condRaceIfMatch},
		{"RaceIfNoneMatch", s.condRaceIfNoneMatch},
		{"ReadWhileWriting", s.condReadWhileWriting},
		{"GetIfChanged", s.condGetIfChanged},
	}
}

type namedCase struct {
	name string
	fn   func(t *testing.T, b bucket.Bucket)
}

// runConditional runs the conditional-write cases.
func (s suite) runConditional(t *testing.T) {
	t.Run("Conditional", func(t *testing.T) {
		for _, c := range s.conditionalCases() {
			t.Run(c.name, func(t *testing.T) {
				c.fn(t, s.newBucket(t))
			})
		}
	})
}

// putIf calls PutIf with data.
func putIf(t *testing.T, b bucket.Bucket, key string, data []byte, cond bucket.Cond) (string, error) {
	t.Helper()
	return b.PutIf(t.Context(), key, bytes.NewReader(data), int64(len(data)), cond)
}

// getETag reads key with GetWithETag and fails the test on error.
func getETag(t *testing.T, b bucket.Bucket, key string) ([]byte, string) {
	t.Helper()
	data, etag, err := b.GetWithETag(t.Context(), key)
	require.NoError(t, err, "get with etag %s", key)
	require.NotEmpty(t, etag, "etag of %s", key)
	return data, etag
}

func (s suite) condCreate(t *testing.T, b bucket.Bucket) {
	etag, err := putIf(t, b, "cond/head", []byte("v1"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	require.NotEmpty(t, etag)
	data, got := getETag(t, b, "cond/head")
	require.Equal(t, "v1", string(data))
	require.Equal(t, etag, got, "PutIf and GetWithETag disagree on the ETag")
	require.Equal(t, "v1", string(get(t, b, "cond/head")))
}

func (s suite) condIfNoneMatchExisting(t *testing.T, b bucket.Bucket) {
	_, err := putIf(t, b, "cond/head", []byte("v1"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	_, err = putIf(t, b, "cond/head", []byte("v2"), bucket.Cond{IfNoneMatch: true})
	require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
	// The same bytes again may pass as a retry of the first write (see the
	// bucket.Conditional contract), but must not fail otherwise.
	_, err = putIf(t, b, "cond/head", []byte("v1"), bucket.Cond{IfNoneMatch: true})
	if err != nil {
		require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
	}
	put(t, b, "cond/plain", []byte("p"))
	_, err = putIf(t, b, "cond/plain", []byte("q"), bucket.Cond{IfNoneMatch: true})
	require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
	require.Equal(t, "v1", string(get(t, b, "cond/head")))
	require.Equal(t, "p", string(get(t, b, "cond/plain")))
}

func (s suite) condIfMatchReplaces(t *testing.T, b bucket.Bucket) {
	e1, err := putIf(t, b, "cond/head", []byte("version-1"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	e2, err := putIf(t, b, "cond/head", []byte("version-2"), bucket.Cond{IfMatch: e1})
	require.NoError(t, err)
	require.NotEqual(t, e1, e2, "the ETag did not change with the bytes")
	data, got := getETag(t, b, "cond/head")
	require.Equal(t, "version-2", string(data))
	require.Equal(t, e2, got)
	e3, err := putIf(t, b, "cond/head", []byte("version-3"), bucket.Cond{IfMatch: e2})
	require.NoError(t, err)
	data, got = getETag(t, b, "cond/head")
	require.Equal(t, "version-3", string(data))
	require.Equal(t, e3, got)
}

func (s suite) condStaleETag(t *testing.T, b bucket.Bucket) {
	e1, err := putIf(t, b, "cond/head", []byte("version-1"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	_, err = putIf(t, b, "cond/head", []byte("version-2"), bucket.Cond{IfMatch: e1})
	require.NoError(t, err)
	_, err = putIf(t, b, "cond/head", []byte("version-x"), bucket.Cond{IfMatch: e1})
	require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
	_, err = putIf(t, b, "cond/head", []byte("version-y"), bucket.Cond{IfMatch: "0123456789abcdef0123456789abcdef"})
	require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
	require.Equal(t, "version-2", string(get(t, b, "cond/head")))
}

func (s suite) condIfMatchMissing(t *testing.T, b bucket.Bucket) {
	_, err := putIf(t, b, "cond/missing", []byte("v"), bucket.Cond{IfMatch: "0123456789abcdef0123456789abcdef"})
	require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
	requireAbsent(t, b, "cond/missing")
}

// condPutObjectETag: an object created by Put can be replaced by PutIf with the ETag
// GetWithETag reports.
func (s suite) condPutObjectETag(t *testing.T, b bucket.Bucket) {
	put(t, b, "cond/head", []byte("from put"))
	_, etag := getETag(t, b, "cond/head")
	_, err := putIf(t, b, "cond/head", []byte("from putif"), bucket.Cond{IfMatch: etag})
	require.NoError(t, err)
	require.Equal(t, "from putif", string(get(t, b, "cond/head")))
}

func (s suite) condInvalid(t *testing.T, b bucket.Bucket) {
	for _, cond := range []bucket.Cond{{}, {IfMatch: "x", IfNoneMatch: true}} {
		_, err := putIf(t, b, "cond/head", []byte("v"), cond)
		require.Error(t, err, "%+v", cond)
		require.NotErrorIs(t, err, bucket.ErrPreconditionFailed, "%+v", cond)
	}
	_, err := putIf(t, b, "../escape", []byte("v"), bucket.Cond{IfNoneMatch: true})
	require.ErrorIs(t, err, bucket.ErrInvalidKey)
	requireAbsent(t, b, "cond/head")
}

// condGetIfChanged: bucket.GetIfChanged (the bucket's own, when it is a
// bucket.ChangeReader) sends no bytes while the ETag is the one held, the
// object when it is not, and ErrNotFound for a missing key.
func (s suite) condGetIfChanged(t *testing.T, b bucket.Bucket) {
	ctx := t.Context()
	e1, err := putIf(t, b, "cond/head", []byte("version-1"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	data, etag, changed, err := bucket.GetIfChanged(ctx, b, "cond/head", e1)
	require.NoError(t, err)
	require.False(t, changed, "the ETag held")
	require.Empty(t, data)
	require.Equal(t, e1, etag)
	for _, held := range []string{"", "not-its-etag"} {
		data, etag, changed, err = bucket.GetIfChanged(ctx, b, "cond/head", held)
		require.NoError(t, err, "held %q", held)
		require.True(t, changed, "held %q", held)
		require.Equal(t, "version-1", string(data), "held %q", held)
		require.Equal(t, e1, etag, "held %q", held)
	}
	e2, err := putIf(t, b, "cond/head", []byte("version-2"), bucket.Cond{IfMatch: e1})
	require.NoError(t, err)
	data, etag, changed, err = bucket.GetIfChanged(ctx, b, "cond/head", e1)
	require.NoError(t, err)
	require.True(t, changed, "written since")
	require.Equal(t, "version-2", string(data))
	require.Equal(t, e2, etag)
	_, _, _, err = bucket.GetIfChanged(ctx, b, "cond/missing", e1)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	_, _, _, err = bucket.GetIfChanged(cancelled(t), b, "cond/head", e2)
	require.Error(t, err)
}

func (s suite) condGetMissing(t *testing.T, b bucket.Bucket) {
	_, _, err := b.GetWithETag(t.Context(), "cond/missing")
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func (s suite) condFailingReader(t *testing.T, b bucket.Bucket) {
	e1, err := putIf(t, b, "cond/head", []byte("version-1"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	data := bytes.Repeat([]byte("x"), 4096)
	_, err = b.PutIf(t.Context(), "cond/head", FailingReader(data, 100), int64(len(data)), bucket.Cond{IfMatch: e1})
	require.Error(t, err)
	_, err = b.PutIf(t.Context(), "cond/new", FailingReader(data, 100), int64(len(data)), bucket.Cond{IfNoneMatch: true})
	require.Error(t, err)
	got, etag := getETag(t, b, "cond/head")
	require.Equal(t, "version-1", string(got))
	require.Equal(t, e1, etag)
	requireAbsent(t, b, "cond/new")
}

func (s suite) condCancelled(t *testing.T, b bucket.Bucket) {
	_, err := b.PutIf(cancelled(t), "cond/head", bytes.NewReader([]byte("v")), 1, bucket.Cond{IfNoneMatch: true})
	require.Error(t, err)
	_, _, err = b.GetWithETag(cancelled(t), "cond/head")
	require.Error(t, err)
	requireAbsent(t, b, "cond/head")
}

// condOrdinaryObject: objects written by PutIf list, stat and delete like any other.
func (s suite) condOrdinaryObject(t *testing.T, b bucket.Bucket) {
	_, err := putIf(t, b, "cond/head", []byte("v1"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	require.Equal(t, []string{"cond/head"}, list(t, b, bucket.ListOptions{Prefix: "cond/"}))
	info, err := b.Stat(t.Context(), "cond/head")
	require.NoError(t, err)
	require.EqualValues(t, 2, info.Size)
	require.NoError(t, b.Delete(t.Context(), "cond/head"))
	requireAbsent(t, b, "cond/head")
	_, err = putIf(t, b, "cond/head", []byte("v2"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err, "create again after delete")
}

// raceWriters is how many goroutines race one condition.
const raceWriters = 8

// race runs raceWriters PutIf calls with cond at once, each with its own bytes, and
// checks that exactly one wins, the others fail with ErrPreconditionFailed, and the
// object holds the winner's bytes under the winner's ETag.
func race(t *testing.T, b bucket.Bucket, key string, cond bucket.Cond) {
	t.Helper()
	type result struct {
		data []byte
		etag string
		err  error
	}
	results := make([]result, raceWriters)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range raceWriters {
		wg.Go(func() {
			data := []byte(fmt.Sprintf("writer-%d", i))
			<-start
			etag, err := b.PutIf(t.Context(), key, bytes.NewReader(data), int64(len(data)), cond)
			results[i] = result{data, etag, err}
		})
	}
	close(start)
	wg.Wait()
	var winners []result
	for i, r := range results {
		if r.err == nil {
			winners = append(winners, r)
			continue
		}
		require.True(t, errors.Is(r.err, bucket.ErrPreconditionFailed), "loser %d: %v", i, r.err)
	}
	require.Len(t, winners, 1, "want exactly one winner")
	winner := winners[0]
	data, etag := getETag(t, b, key)
	require.Equal(t, string(winner.data), string(data))
	require.Equal(t, winner.etag, etag)
}

func (s suite) condRaceIfMatch(t *testing.T, b bucket.Bucket) {
	e1, err := putIf(t, b, "cond/head", []byte("base"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	race(t, b, "cond/head", bucket.Cond{IfMatch: e1})
}

func (s suite) condRaceIfNoneMatch(t *testing.T, b bucket.Bucket) {
	race(t, b, "cond/head", bucket.Cond{IfNoneMatch: true})
}

// condReadWhileWriting: GetWithETag never fails or mixes versions while PutIf
// replaces the object: every read returns some version's bytes with that version's
// ETag.
func (s suite) condReadWhileWriting(t *testing.T, b bucket.Bucket) {
	const versions = 20
	etag, err := putIf(t, b, "cond/head", []byte("version-0"), bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	written := map[string]string{etag: "version-0"}
	type read struct{ data, etag string }
	var reads []read
	var readErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for range versions {
			data, etag, err := b.GetWithETag(t.Context(), "cond/head")
			if err != nil {
				readErr = err
				return
			}
			reads = append(reads, read{string(data), etag})
		}
	})
	for i := 1; i <= versions; i++ {
		data := fmt.Sprintf("version-%d", i)
		etag, err = putIf(t, b, "cond/head", []byte(data), bucket.Cond{IfMatch: etag})
		require.NoError(t, err)
		written[etag] = data
	}
	wg.Wait()
	require.NoError(t, readErr)
	require.Len(t, reads, versions)
	for _, r := range reads {
		require.Equal(t, written[r.etag], r.data, "read %q with etag %s", r.data, r.etag)
	}
}
