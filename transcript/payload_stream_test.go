package transcript_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// streamSession writes a session of images (some shared, near and far apart,
// one entry holding the same image twice and another two different ones), tool
// results with escapes and entries without payloads, and returns its ref and
// the number of distinct payloads.
func streamSession(t *testing.T, s *transcript.Store) (transcript.TranscriptRef, int) {
	t.Helper()
	ref := transcript.TranscriptRef{Namespace: "ns", AgentID: "a", SessionID: "stream"}
	w, err := transcript.NewWriter("w")
	require.NoError(t, err)
	shared := imageData(99, 3*testThreshold)
	twice := func(id, parent, d1, d2 string) []byte {
		return fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q,"message":{"role":"user","content":[{"type":"image","data":%q},{"type":"text","text":"and"},{"type":"image","data":%q}]}}`, id, parent, d1, d2)
	}
	var batch [][]byte
	parent := ""
	distinct := map[string]bool{shared: true}
	for k := range 24 {
		id := fmt.Sprintf("e%02d", k)
		var e []byte
		switch k % 6 {
		case 0:
			e = imageEntry(id, parent, shared)
		case 1:
			d := imageData(uint64(k), (k+2)*testThreshold)
			distinct[d] = true
			e = imageEntry(id, parent, d)
		case 2:
			e = toolEntry(id, parent, strings.Repeat("line \"quoted\"\n\tand more ", 80))
			distinct["tool"] = true
		case 3:
			e = []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"message":{"role":"user","content":"no payload"}}`, id, parent))
		case 4:
			e = twice(id, parent, shared, shared)
		case 5:
			d := imageData(uint64(100+k), 2*testThreshold)
			distinct[d] = true
			e = twice(id, parent, d, shared)
		}
		batch = append(batch, e)
		parent = id
		if k%5 == 4 {
			_, err := s.AppendSegment(context.Background(), ref, batch, w)
			require.NoError(t, err)
			batch = nil
		}
	}
	_, err = s.AppendSegment(context.Background(), ref, batch, w)
	require.NoError(t, err)
	return ref, len(distinct)
}

// TestEachResolved_AsAResolvedRead: whatever the window (a few bytes: one
// payload at a time; a few payloads; the default) and the order of the entries
// asked for, EachResolved gives each entry the bytes a read with payloads
// gives, every payload a string's contents (Plain); with a window that holds
// the session, each distinct payload is fetched once.
func TestEachResolved_AsAResolvedRead(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	gets := faultbucket.Wrap(membucket.New()) // counts the requests
	s, err := transcript.New(transcript.Config{Bucket: gets, PayloadThreshold: testThreshold})
	require.NoError(t, err)
	defer s.Close()
	ref, distinct := streamSession(t, s)
	want, err := s.ReadLean(ctx, ref)
	require.NoError(t, err)
	stored, err := s.ReadLeanStored(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want.Len(), stored.Len())
	all := make([]int, stored.Len())
	withRefs := 0
	for i := range all {
		all[i] = i
		if len(stored.Refs(i)) > 0 {
			withRefs++
		}
	}
	require.Greater(t, withRefs, 15)
	reversed := slices.Clone(all)
	slices.Reverse(reversed)
	var odd []int
	for i := 1; i < len(all); i += 2 {
		odd = append(odd, i)
	}
	for _, window := range []int64{0, 1, 4 * testThreshold, 40 * testThreshold} {
		for name, idx := range map[string][]int{"merge order": all, "reversed": reversed, "every other": odd} {
			t.Run(fmt.Sprintf("window %d, %s", window, name), func(t *testing.T) {
				transcript.SetResolveWindow(s, window)
				gets.ResetCounts()
				var got []int
				fetchedOnce := window == 0 && len(idx) == len(all)
				err := s.EachResolved(ctx, ref, stored, idx, func(i int, e transcript.ResolvedEntry) error {
					if fetchedOnce && len(got) == 0 {
						// Hold the first entry until the scheduler, which the
						// window never stops here, has started every fetch: an
						// entry released before the scheduler reaches the next
						// holder of its payload would let that payload leave the
						// window and be fetched again, which is what a window is
						// for, not what this test asks.
						require.Eventually(t, func() bool { return gets.Counts().Get >= int64(distinct) }, 10*time.Second, time.Millisecond)
					}
					got = append(got, i)
					require.Equal(t, string(want.Raw(i)), string(e.Bytes()), "entry %d", i)
					require.Equal(t, len(want.Raw(i)), e.Len())
					require.True(t, e.Plain)
					if len(stored.Refs(i)) == 0 {
						require.Len(t, e.Pieces, 1)
					}
					return nil
				})
				require.NoError(t, err)
				require.Equal(t, idx, got)
				if fetchedOnce {
					require.Equal(t, int64(distinct), gets.Counts().Get, "each distinct payload fetched once")
				}
			})
		}
	}
}

// TestEachResolved_Faults: a missing payload object, a corrupt one, an error
// of fn and a cancelled context each stop EachResolved with that error, and
// every goroutine it started has ended when it returns.
func TestEachResolved_Faults(t *testing.T) {
	errStop := errors.New("stop")
	tests := []struct {
		name  string
		fault func(t *testing.T, b bucket.Bucket, key string)
		stop  int // fn fails at its stop-th call (0: never)
		want  error
	}{
		{name: "missing", fault: func(t *testing.T, b bucket.Bucket, key string) {
			require.NoError(t, b.Delete(context.Background(), key))
		}, want: transcript.ErrPayloadMissing},
		{name: "corrupt", fault: func(t *testing.T, b bucket.Bucket, key string) {
			rc, _, err := b.Get(context.Background(), key)
			require.NoError(t, err)
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			require.NoError(t, rc.Close())
			require.NoError(t, b.Delete(context.Background(), key))
			data[len(data)/2] ^= 0xff
			require.NoError(t, b.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
		}, want: segment.ErrCorrupt},
		{name: "fn fails", stop: 3, want: errStop},
		{name: "cancelled", stop: -1, want: context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			b := membucket.New()
			s, err := transcript.New(transcript.Config{Bucket: b, PayloadThreshold: testThreshold})
			require.NoError(t, err)
			defer s.Close()
			transcript.SetResolveWindow(s, 4*testThreshold)
			ref, _ := streamSession(t, s)
			stored, err := s.ReadLeanStored(context.Background(), ref)
			require.NoError(t, err)
			var last segment.PayloadRef
			idx := make([]int, stored.Len())
			for i := range idx {
				idx[i] = i
				if refs := stored.Refs(i); len(refs) > 0 {
					last = refs[len(refs)-1]
				}
			}
			if tc.fault != nil {
				tc.fault(t, b, "ns/payloads/"+fmt.Sprintf("%x", last.Hash)+".zst")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			err = s.EachResolved(ctx, ref, stored, idx, func(i int, e transcript.ResolvedEntry) error {
				calls++
				switch {
				case tc.stop > 0 && calls == tc.stop:
					return errStop
				case tc.stop < 0 && calls == 2:
					cancel()
				}
				return nil
			})
			require.ErrorIs(t, err, tc.want)
			require.Less(t, calls, len(idx)+1)
		})
	}
}
