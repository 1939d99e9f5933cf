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

func (s suite) concurrentWriters(t *testing.T, b bucket.Bucket) {
	const writers, perWriter = 8, 50
	content := func(w, i int) []byte { return fmt.Appendf(nil, "writer %d object %d", w, i) }
	key := func(w, i int) string { return fmt.Sprintf("conc/session/L0/%03d-w%d", i, w) }

	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				data := content(w, i)
				err := b.Put(t.Context(), key(w, i), bytes.NewReader(data), int64(len(data)),
					bucket.PutOptions{Checksum: sum(data)})
				if err != nil {
					errs <- fmt.Errorf("put %s: %w", key(w, i), err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	listed := list(t, b, bucket.ListOptions{Prefix: "conc/session/"})
	require.Len(t, listed, writers*perWriter)
	for w := range writers {
		for i := range perWriter {
			require.Equal(t, content(w, i), get(t, b, key(w, i)))
		}
	}
}

func (s suite) concurrentSameKey(t *testing.T, b bucket.Bucket) {
	const writers = 8
	const key = "race/seg"
	content := func(w int) []byte { return fmt.Appendf(nil, "content from writer %d", w) }

	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			<-start
			data := content(w)
			results[w] = b.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)),
				bucket.PutOptions{Checksum: sum(data)})
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for w, err := range results {
		if err == nil {
			require.Equal(t, -1, winner, "writers %d and %d both won", winner, w)
			winner = w
			continue
		}
		require.True(t, errors.Is(err, bucket.ErrExists), "writer %d: %v", w, err)
	}
	require.NotEqual(t, -1, winner, "no writer won")
	require.Equal(t, content(winner), get(t, b, key))
	require.Equal(t, []string{key}, list(t, b, bucket.ListOptions{}))
}
