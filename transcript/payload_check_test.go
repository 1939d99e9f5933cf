package transcript_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// requestCounter counts every request a bucket makes, by kind, and the GETs of
// payload objects.
type requestCounter struct {
	bucket.Bucket
	mu                              sync.Mutex
	gets, heads, lists, puts, pgets int
}

func (b *requestCounter) add(n *int, key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	*n++
	if n == &b.gets && strings.Contains(key, "/payloads/") {
		b.pgets++
	}
}

func (b *requestCounter) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	b.add(&b.gets, key)
	return b.Bucket.Get(ctx, key)
}

func (b *requestCounter) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b.add(&b.gets, key)
	return b.Bucket.GetRange(ctx, key, off, n)
}

func (b *requestCounter) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	b.add(&b.heads, key)
	return b.Bucket.Stat(ctx, key)
}

func (b *requestCounter) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	b.add(&b.lists, opts.Prefix)
	return b.Bucket.List(ctx, opts, fn)
}

func (b *requestCounter) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	b.add(&b.puts, key)
	return b.Bucket.Put(ctx, key, r, size, opts)
}

// forkCounts are the requests of one fork: the source's read as stored, and the
// rest (the look at the marks and the writes).
type forkCounts struct {
	readGets, readLists             int
	gets, heads, lists, puts, pgets int
}

func (b *requestCounter) take() (gets, heads, lists, puts, pgets int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	gets, heads, lists, puts, pgets = b.gets, b.heads, b.lists, b.puts, b.pgets
	b.gets, b.heads, b.lists, b.puts, b.pgets = 0, 0, 0, 0, 0
	return
}

// imageSession writes a session of turns segments, each an image of its own and
// a reply, and returns its entries as written.
func imageSession(t testing.TB, s *transcript.Store, r transcript.TranscriptRef, turns int) [][]byte {
	t.Helper()
	ctx := context.Background()
	w := newWriter(t, "w1")
	var all [][]byte
	parent := ""
	for i := range turns {
		u, a := fmt.Sprintf("u%03d", i), fmt.Sprintf("a%03d", i)
		batch := [][]byte{imageEntry(u, parent, imageData(uint64(100+i), 2*testThreshold)), entry(a, u)}
		_, err := s.AppendSegment(ctx, r, batch, w)
		require.NoError(t, err)
		all, parent = append(all, batch...), a
	}
	return all
}

// checkedFork forks src as session id of its agent as Repository.Fork does:
// CheckPayloads, then a Stored read, then AppendChecked; it returns the requests
// of each part.
func checkedFork(t testing.TB, s *transcript.Store, b *requestCounter, src transcript.TranscriptRef, id string) forkCounts {
	t.Helper()
	ctx := context.Background()
	var c forkCounts
	b.take()
	chk, err := s.CheckPayloads(ctx, src.Namespace)
	require.NoError(t, err)
	g, h, l, p, pg := b.take()
	res, err := s.Stored().ReadAll(ctx, src)
	require.NoError(t, err)
	c.readGets, _, c.readLists, _, _ = b.take()
	fork := src
	fork.SessionID = id
	infos, err := s.AppendChecked(ctx, fork, chk, res.Entries, newWriter(t, "w2"))
	require.NoError(t, err)
	require.Len(t, infos, 1, "a fork of references is one segment")
	g2, h2, l2, p2, pg2 := b.take()
	c.gets, c.heads, c.lists, c.puts, c.pgets = g+g2, h+h2, l+l2, p+p2, pg+pg2
	return c
}

// TestAppendChecked_RequestsIndependentOfPayloads: a fork within the namespace
// that relies on a look at the marks taken before its read costs, beside that
// read, one LIST and one PUT, however many payloads the session holds: no HEAD
// and no payload GET; it reads back byte for byte.
func TestAppendChecked_RequestsIndependentOfPayloads(t *testing.T) {
	for name, newBucket := range testBackends() {
		for _, turns := range []int{2, 12} {
			t.Run(fmt.Sprintf("%s/%d images", name, turns), func(t *testing.T) {
				b := &requestCounter{Bucket: newBucket(t)}
				s := newStore(t, b, transcript.Config{Prefix: "p", PayloadThreshold: testThreshold})
				want := imageSession(t, s, ref, turns)
				c := checkedFork(t, s, b, ref, "fork")
				require.Equal(t, forkCounts{readGets: c.readGets, readLists: c.readLists, lists: 1, puts: 1}, c,
					"one LIST of the marks and one segment PUT beside the read")
				require.LessOrEqual(t, c.readGets, turns, "the read fetches each segment once, no payload")
				requireEveryRead(t, s, transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "fork"}, want)
				require.Len(t, payloadKeys(t, b, "p/", ref.Namespace), turns, "no payload stored again")
			})
		}
	}
}

// TestAppendChecked_Marked: a payload the look at the marks found marked is
// written inline in the fork (read from its object); the others stay
// references; the fork reads back byte for byte.
func TestAppendChecked_Marked(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	s := newStore(t, b, transcript.Config{Prefix: "p", PayloadThreshold: testThreshold})
	want := imageSession(t, s, ref, 2)
	h := payloadKeys(t, b, "p/", ref.Namespace)[0]
	mark := "p/" + ref.Namespace + "/payloads/gc/" + h + ".mark.json"
	require.NoError(t, b.Put(ctx, mark, bytes.NewReader([]byte("{}")), 2, bucket.PutOptions{}))

	chk, err := s.CheckPayloads(ctx, ref.Namespace)
	require.NoError(t, err)
	res, err := s.Stored().ReadAll(ctx, ref)
	require.NoError(t, err)
	fork := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "fork"}
	_, err = s.AppendChecked(ctx, fork, chk, res.Entries, newWriter(t, "w2"))
	require.NoError(t, err)
	stored, err := s.Stored().ReadAll(ctx, fork)
	require.NoError(t, err)
	var refs []string
	for _, e := range stored.Entries {
		for _, r := range e.Refs {
			refs = append(refs, hex.EncodeToString(r.Hash[:]))
		}
	}
	require.Len(t, refs, 1, "the marked payload is inline, the other a reference")
	require.NotEqual(t, h, refs[0])
	requireEveryRead(t, s, fork, want)
}

// TestAppendChecked_LateCopyLooksAgain: a copy whose segment lands more than
// the window after its check looks at the payloads again; one gone by then (the
// collector deleted it) fails the fork, and its segment is removed.
func TestAppendChecked_LateCopyLooksAgain(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	s := newStore(t, b, transcript.Config{Prefix: "p", PayloadThreshold: testThreshold})
	imageSession(t, s, ref, 1)
	chk, err := s.CheckPayloads(ctx, ref.Namespace)
	require.NoError(t, err)
	res, err := s.Stored().ReadAll(ctx, ref)
	require.NoError(t, err)
	for _, h := range payloadKeys(t, b, "p/", ref.Namespace) {
		require.NoError(t, b.Delete(ctx, "p/"+ref.Namespace+"/payloads/"+h+".zst"))
	}
	fork := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "fork"}
	_, err = s.AppendChecked(ctx, fork, chk, res.Entries, newWriter(t, "w2"))
	require.NoError(t, err, "within the window the check stands")
	require.NoError(t, s.Delete(ctx, fork))

	transcript.AgePayloadCheck(&chk, transcript.PayloadWindow)
	_, err = s.AppendChecked(ctx, fork, chk, res.Entries, newWriter(t, "w2"))
	require.ErrorIs(t, err, transcript.ErrPayloadMissing)
	exists, err := s.SessionExists(ctx, fork)
	require.NoError(t, err)
	require.False(t, exists, "the segment that references a missing payload is removed")
}

// TestPayloadGC_CheckedForkSurvives: the race the order of the check guards
// against. A fork takes its check and reads the source; the source is deleted,
// and the collector marks the payload (no segment references it) before the
// fork's segment lands. The collector's next run sees the fork's segment: the
// payload stays, its mark goes, and the fork reads byte for byte.
func TestPayloadGC_CheckedForkSurvives(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := newBucket(t)
			s := gcStore(t, b)
			chk, err := s.CheckPayloads(ctx, ref.Namespace)
			require.NoError(t, err)
			want, res := readThenDelete(t, s, 31)
			gc, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 1, gc.Marked, "no segment references the payload yet")

			fork := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "fork"}
			_, err = s.AppendChecked(ctx, fork, chk, res.Entries, newWriter(t, "w2"))
			require.NoError(t, err)
			gc, err = s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 0, gc.Deleted)
			require.Equal(t, 1, gc.Unmarked)
			requireEveryRead(t, s, fork, want)
		})
	}
}

// BenchmarkFork_Payloads forks a session of 32 segments, each with an image,
// within its namespace: "heads" as AppendStored does (a look at each payload
// object), "checked" as AppendChecked does (one look at the marks before the
// read). Over membucket, and MinIO when TRANSCRIPT_TEST_S3_ENDPOINT is set;
// reports the requests per fork beside the time.
func BenchmarkFork_Payloads(b *testing.B) {
	for name, newBucket := range benchBackends(b) {
		for _, mode := range []string{"heads", "checked"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				cb := &requestCounter{Bucket: newBucket(b)}
				s := newStore(b, cb, transcript.Config{Prefix: "p", PayloadThreshold: testThreshold})
				imageSession(b, s, ref, 32)
				w := newWriter(b, "w2")
				cb.take()
				n := 0
				for b.Loop() {
					fork := ref
					fork.SessionID = fmt.Sprintf("fork-%d", n)
					n++
					require.NoError(b, benchFork(ctx, s, mode == "checked", fork, w))
				}
				g, h, l, p, _ := cb.take()
				b.ReportMetric(float64(g+h+l+p)/float64(n), "requests/op")
				b.ReportMetric(float64(h)/float64(n), "HEADs/op")
			})
		}
	}
}

// benchFork forks ref whole into fork: with checked, as AppendChecked does; else
// as AppendStored does.
func benchFork(ctx context.Context, s *transcript.Store, checked bool, fork transcript.TranscriptRef, w *transcript.Writer) error {
	var chk transcript.PayloadCheck
	if checked {
		var err error
		if chk, err = s.CheckPayloads(ctx, ref.Namespace); err != nil {
			return err
		}
	}
	res, err := s.Stored().ReadAll(ctx, ref)
	if err != nil {
		return err
	}
	if checked {
		_, err = s.AppendChecked(ctx, fork, chk, res.Entries, w)
	} else {
		_, err = s.AppendStored(ctx, fork, ref.Namespace, res.Entries, w)
	}
	return err
}
