package transcript_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// landsDuringListing is a bucket whose first listing that when accepts runs
// land once it has handed out after keys: on a bucket that lists in pages, and
// with after a page's size, that is between two of the listing's requests (an
// S3 listing iterator asks for the next page only when it needs its first key).
type landsDuringListing struct {
	bucket.Bucket
	after int
	when  func(bucket.ListOptions) bool
	land  func()
	once  sync.Once
}

func (l *landsDuringListing) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	n := 0
	return l.Bucket.List(ctx, opts, func(oi bucket.ObjectInfo) error {
		err := fn(oi)
		if n++; n == l.after && l.when(opts) {
			l.once.Do(l.land)
		}
		return err
	})
}

// firstPaged accepts a listing with a first page: a cold ReadAll's first request.
func firstPaged(opts bucket.ListOptions) bool { return opts.FirstPage > 0 }

// TestReadAll_SeesTheParentOfWhatItSees: a segment whose key sorts inside the
// first page of a cold read's listing but that lands after that page was
// listed (a PUT in flight, or a replica whose clock is behind and which has not
// read the session lately), followed by its child, which sorts last. A read
// that shows the child shows its parent: the listing's later requests do not
// take the first page's keys as settled.
func TestReadAll_SeesTheParentOfWhatItSees(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := newBucket(t)
			s := newStore(t, b, transcript.Config{})
			ids := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 40)
			// A replica an hour behind that has not listed the session: its key
			// sorts before every key listed so far.
			behind := newStore(t, b, transcript.Config{Now: func() time.Time { return time.Now().Add(-time.Hour) }})
			land := func() {
				_, err := behind.AppendSegment(ctx, ref, [][]byte{entry("p", ids[len(ids)-1])}, newWriter(t, "behind"))
				require.NoError(t, err)
				_, err = s.AppendSegment(ctx, ref, [][]byte{entry("c", "p")}, newWriter(t, "w2"))
				require.NoError(t, err)
			}
			l := &landsDuringListing{Bucket: b, after: 32, when: firstPaged, land: land}
			got, err := newStore(t, l, transcript.Config{}).ReadAll(ctx, ref)
			require.NoError(t, err)
			landed := false
			l.once.Do(func() { landed = true })
			require.False(t, landed, "the segments landed during the read's listing")
			require.Empty(t, got.Dangling(), "an entry without its parent: %v", entryIDs(got.Dangling()))
			require.Empty(t, got.Missing(ids))
		})
	}
}
