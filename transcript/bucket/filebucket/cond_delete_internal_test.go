package filebucket

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestDeleteWaitsForAConditionalWrite: a Delete that comes while a PutIf has
// checked its condition but not yet written waits for the write, then deletes:
// the object is gone once both are done. (Without the lock, the Delete removed
// the file between the check and the write, and the write put it back: a
// session's head outlived the session.) A PutIf after the Delete finds no
// object to match.
func TestDeleteWaitsForAConditionalWrite(t *testing.T) {
	ctx := context.Background()
	b, err := New(t.TempDir())
	require.NoError(t, err)
	const key = "ns/agent/s/HEAD.json"
	etag, err := b.PutIf(ctx, key, bytes.NewReader([]byte("v1")), 2, bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)

	var wg sync.WaitGroup
	var delErr error
	b.condWritten = func() {
		b.condWritten = nil
		wg.Go(func() { delErr = b.Delete(ctx, key) })
		time.Sleep(50 * time.Millisecond) // the Delete would be done by now, were it not waiting
	}
	_, err = b.PutIf(ctx, key, bytes.NewReader([]byte("v2")), 2, bucket.Cond{IfMatch: etag})
	require.NoError(t, err)
	wg.Wait()
	require.NoError(t, delErr)
	_, err = b.Stat(ctx, key)
	require.True(t, errors.Is(err, bucket.ErrNotFound), "the object is gone after both: %v", err)

	_, err = b.PutIf(ctx, key, bytes.NewReader([]byte("v3")), 2, bucket.Cond{IfMatch: etag})
	require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
}
