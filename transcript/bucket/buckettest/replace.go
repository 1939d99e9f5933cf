package buckettest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// replaceObject checks Replace: it creates a missing key, overwrites one made by
// Put or by an earlier Replace (last writer wins), stores its options as Put
// does, and refuses an invalid key.
func (s suite) replaceObject(t *testing.T, b bucket.Bucket) {
	replace := func(key string, data []byte) {
		t.Helper()
		err := b.Replace(t.Context(), key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{Checksum: sum(data)})
		require.NoError(t, err, "replace %s", key)
	}
	replace("rep/new", []byte("first"))
	require.Equal(t, "first", string(get(t, b, "rep/new")))
	replace("rep/new", []byte("second, longer"))
	require.Equal(t, "second, longer", string(get(t, b, "rep/new")))
	replace("rep/new", []byte("3"))
	require.Equal(t, "3", string(get(t, b, "rep/new")), "a shorter version leaves nothing of a longer one")

	put(t, b, "rep/put", []byte("by put"))
	replace("rep/put", []byte("by replace"))
	info, err := b.Stat(t.Context(), "rep/put")
	require.NoError(t, err)
	require.EqualValues(t, len("by replace"), info.Size)
	if !s.opts.ChecksumNotStored {
		require.Equal(t, sum([]byte("by replace")), info.Checksum)
	}
	require.Equal(t, []string{"rep/new", "rep/put"}, list(t, b, bucket.ListOptions{Prefix: "rep/"}))

	err = b.Replace(t.Context(), "rep/../x", bytes.NewReader([]byte("x")), 1, bucket.PutOptions{})
	require.ErrorIs(t, err, bucket.ErrInvalidKey)
}

// replaceAtomic: a Replace whose source fails, or comes up short, leaves the old
// object whole (or no object); concurrent Replaces leave one writer's bytes.
func (s suite) replaceAtomic(t *testing.T, b bucket.Bucket) {
	put(t, b, "rep/obj", []byte("old"))
	data := bytes.Repeat([]byte("new "), 1024)
	err := b.Replace(t.Context(), "rep/obj", FailingReader(data, 100), int64(len(data)), bucket.PutOptions{})
	require.Error(t, err)
	err = b.Replace(t.Context(), "rep/fresh", FailingReader(data, 100), int64(len(data)), bucket.PutOptions{})
	require.Error(t, err)
	err = b.Replace(t.Context(), "rep/obj", bytes.NewReader(data[:100]), int64(len(data)), bucket.PutOptions{})
	require.Error(t, err, "a source shorter than size")
	require.Equal(t, "old", string(get(t, b, "rep/obj")))
	requireAbsent(t, b, "rep/fresh")

	const writers = 6
	versions := map[string]bool{}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		v := bytes.Repeat(fmt.Appendf(nil, "writer-%d;", i), 512)
		versions[string(v)] = true
		wg.Go(func() {
			errs[i] = b.Replace(t.Context(), "rep/obj", bytes.NewReader(v), int64(len(v)), bucket.PutOptions{Checksum: sum(v)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
	require.True(t, versions[string(get(t, b, "rep/obj"))], "the object is not one writer's whole bytes")
}

// clock checks Now: the bucket's clock agrees, within a minute, with the ModTime
// it stamps on an object stored meanwhile (whole seconds on S3), and does not go
// back by a second or more.
func (s suite) clock(t *testing.T, b bucket.Bucket) {
	before, err := b.Now(t.Context())
	require.NoError(t, err)
	put(t, b, "clock/obj", []byte("x"))
	after, err := b.Now(t.Context())
	require.NoError(t, err)
	// A clock read from a server's Date header (whole seconds) may step back by
	// less than a second when a newer response resynchronises it.
	require.False(t, after.Before(before.Add(-time.Second)), "the clock went back: %v, then %v", before, after)
	info, err := b.Stat(t.Context(), "clock/obj")
	require.NoError(t, err)
	require.WithinRange(t, info.ModTime, before.Add(-time.Minute), after.Add(time.Minute))
}
