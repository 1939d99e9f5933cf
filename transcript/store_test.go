package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

var ref = transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}

func entry(id, parent string) []byte {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":"hi %s"}}`, id, p, id))
}

func newStore(t testing.TB, b bucket.Bucket, cfg transcript.Config) *transcript.Store {
	t.Helper()
	cfg.Bucket = b
	s, err := transcript.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// settleOutputs moves b's clock two minutes ahead, past the minute for which
// Compact leaves the inputs of an output it did not write (one its writer may
// still drop when it finds them gone).
func settleOutputs(b *membucket.Bucket) {
	b.SetClock(func() time.Time { return time.Now().Add(2 * time.Minute) })
}

func newWriter(t testing.TB, id string) *transcript.Writer {
	t.Helper()
	w, err := transcript.NewWriter(id)
	require.NoError(t, err)
	return w
}

func ids(res *transcript.MergeResult) []string {
	out := make([]string, len(res.Entries))
	for i, e := range res.Entries {
		out[i] = e.ID
	}
	return out
}

func TestStore_AppendSegment_ReadAll(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{Prefix: "/p/"})
	w := newWriter(t, "w1")

	info, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", ""), entry("b", "a")}, w)
	require.NoError(t, err)
	require.Regexp(t, `^p/acme/coder/s1/L0/\d{8}T\d{6}\.\d{9}Z-w1-0000000000000001-[0-9a-f]{16}\.jsonl\.zst$`, info.Key)
	_, err = s.AppendSegment(ctx, ref, [][]byte{entry("c", "b")}, w)
	require.NoError(t, err)

	segs, err := s.ListSegments(ctx, ref)
	require.NoError(t, err)
	require.Len(t, segs, 2)
	require.Equal(t, info.Key, segs[0].Key)

	seg, err := s.ReadSegment(ctx, info.Key)
	require.NoError(t, err)
	require.Equal(t, uint32(2), seg.Meta.EntryCount)
	require.Equal(t, "a", seg.Meta.FirstID)
	require.Equal(t, "b", seg.Meta.LastID)
	require.Equal(t, "w1", seg.Meta.WriterID)
	require.Equal(t, entry("a", ""), seg.Entries[0])

	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, ids(res))
	require.Equal(t, entry("c", "b"), res.Entries[2].Raw)
	require.Empty(t, res.Conflicts)
	require.Len(t, res.Raw(), 3)
}

func TestStore_AppendSegment_Invalid(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	w := newWriter(t, "w1")
	tests := []struct {
		name    string
		ref     transcript.TranscriptRef
		entries [][]byte
		want    error
	}{
		{"empty", ref, nil, transcript.ErrEmptySegment},
		{"bad ref", transcript.TranscriptRef{AgentID: "a/b", SessionID: "s"}, [][]byte{entry("a", "")}, transcript.ErrInvalidRef},
		{"not json", ref, [][]byte{[]byte("nope")}, pi.ErrInvalidEntry},
		{"no id", ref, [][]byte{[]byte(`{"type":"x"}`)}, pi.ErrInvalidEntry},
		{"numeric id", ref, [][]byte{[]byte(`{"type":"x","id":7}`)}, pi.ErrInvalidEntry},
		{"bad parent", ref, [][]byte{[]byte(`{"type":"x","id":"a","parentId":3}`)}, pi.ErrInvalidEntry},
		{"line break", ref, [][]byte{[]byte("{\"type\":\"x\",\n\"id\":\"a\"}")}, pi.ErrInvalidEntry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.AppendSegment(ctx, tt.ref, tt.entries, w)
			require.ErrorIs(t, err, tt.want)
		})
	}
	segs, err := s.ListSegments(ctx, ref)
	require.NoError(t, err)
	require.Empty(t, segs, "a refused append stores nothing")
}

func TestStore_ReadAll_NotFound(t *testing.T) {
	s := newStore(t, membucket.New(), transcript.Config{})
	_, err := s.ReadAll(context.Background(), ref)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	_, err = s.ReadLean(context.Background(), ref)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	_, err = s.ReadNew(context.Background(), ref, transcript.SegmentSet{})
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

// TestStore_ReadAll_Merge checks union-merge: duplicates collapse, conflicts are
// reported and resolved the same way on every replica, parents come before children
// even when the child's segment sorts first.
func TestStore_ReadAll_Merge(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	s := newStore(t, b, transcript.Config{Now: tick})
	w1, w2 := newWriter(t, "w1"), newWriter(t, "w2")

	// The child of "x" is written first; "x" itself arrives in a later segment.
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry("root", ""), entry("y", "x")}, w1)
	require.NoError(t, err)
	_, err = s.AppendSegment(ctx, ref, [][]byte{entry("root", ""), entry("x", "root")}, w2)
	require.NoError(t, err)
	// A conflicting version of "x" in a later segment loses to the earlier one.
	conflicting := []byte(`{"type":"message","id":"x","parentId":"root","timestamp":"2026-09-25T22:29:10.000Z","other":true}`)
	_, err = s.AppendSegment(ctx, ref, [][]byte{conflicting, entry("z", "root")}, w1)
	require.NoError(t, err)

	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"root", "x", "y", "z"}, ids(res))
	require.Len(t, res.Conflicts, 1)
	require.Equal(t, "x", res.Conflicts[0].ID)
	require.Equal(t, entry("x", "root"), res.Entries[1].Raw)

	// A second store over the same bucket (another replica) sees the same order.
	other := newStore(t, b, transcript.Config{ReadConcurrency: 1})
	res2, err := other.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, ids(res), ids(res2))
}

func TestStore_ReadAll_Cycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", "b"), entry("b", "a"), entry("c", "c")}, newWriter(t, "w"))
	require.NoError(t, err)
	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b", "c"}, ids(res))
	require.Equal(t, 1, res.Cycles)
}

func TestStore_ConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	const writers, perWriter = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, _ := transcript.NewWriter(fmt.Sprintf("w%d", i))
			parent := ""
			for j := range perWriter {
				id := fmt.Sprintf("w%d-%d", i, j)
				_, err := s.AppendSegment(ctx, ref, [][]byte{entry(id, parent)}, w)
				errs <- err
				parent = id
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, res.Entries, writers*perWriter)
	pos := map[string]int{}
	for i, e := range res.Entries {
		pos[e.ID] = i
	}
	for _, e := range res.Entries {
		if e.ParentID != "" {
			require.Less(t, pos[e.ParentID], pos[e.ID], "parent before child")
		}
	}
}

func TestStore_Namespaces(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{})
	w := newWriter(t, "w")
	acme := ref
	other := transcript.TranscriptRef{Namespace: "globex", AgentID: "coder", SessionID: "s1"}
	for _, r := range []transcript.TranscriptRef{acme, other} {
		_, err := s.AppendSegment(ctx, r, [][]byte{entry("a", "")}, w)
		require.NoError(t, err)
	}

	bound, err := s.WithNamespace("acme")
	require.NoError(t, err)
	_, err = bound.ReadAll(ctx, acme)
	require.NoError(t, err)
	_, err = bound.ReadAll(ctx, other)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	segs, err := bound.ListSegments(ctx, other)
	require.NoError(t, err)
	require.Empty(t, segs)
	sessions, err := bound.ListSessions(ctx, "globex", "coder")
	require.NoError(t, err)
	require.Empty(t, sessions)
	nss, err := bound.ListNamespaces(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"acme"}, nss)
	_, err = bound.AppendSegment(ctx, other, [][]byte{entry("b", "")}, w)
	require.ErrorIs(t, err, transcript.ErrInvalidRef)
	require.NoError(t, bound.Delete(ctx, other)) // a no-op: it does not exist for bound
	otherSegs, err := s.ListSegments(ctx, other)
	require.NoError(t, err)
	require.Len(t, otherSegs, 1, "a bound store cannot delete another namespace's keys")
	_, err = bound.ReadSegment(ctx, otherSegs[0].Key)
	require.ErrorIs(t, err, bucket.ErrNotFound)

	all, err := s.ListNamespaces(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"acme", "globex"}, all)
}

func TestStore_ListSessions_Delete(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{Prefix: "root"})
	w := newWriter(t, "w")
	for _, sid := range []string{"s2", "s1", "s10"} {
		r := ref
		r.SessionID = sid
		for range 2 {
			_, err := s.AppendSegment(ctx, r, [][]byte{entry("a-"+sid, "")}, w)
			require.NoError(t, err)
		}
	}
	sessions, err := s.ListSessions(ctx, "acme", "coder")
	require.NoError(t, err)
	require.Equal(t, []string{"s1", "s10", "s2"}, sessions)
	agents, err := s.ListAgents(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []string{"coder"}, agents)

	require.NoError(t, s.Delete(ctx, ref))
	_, err = s.ReadAll(ctx, ref)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	sessions, err = s.ListSessions(ctx, "acme", "coder")
	require.NoError(t, err)
	require.Equal(t, []string{"s10", "s2"}, sessions)
	require.NoError(t, s.Delete(ctx, ref), "deleting a missing session is not an error")
}

// vanishing deletes a segment between the listing and the fetch once, as a
// compaction's garbage collection would.
type vanishing struct {
	bucket.Bucket
	once sync.Once
}

func (v *vanishing) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	v.once.Do(func() { _ = v.Bucket.Delete(ctx, key) })
	return v.Bucket.Get(ctx, key)
}

func TestStore_ReadAll_Relists(t *testing.T) {
	ctx := context.Background()
	mem := membucket.New()
	w := newWriter(t, "w")
	s := newStore(t, mem, transcript.Config{})
	for _, id := range []string{"a", "b"} {
		_, err := s.AppendSegment(ctx, ref, [][]byte{entry(id, "")}, w)
		require.NoError(t, err)
	}
	r := newStore(t, &vanishing{Bucket: mem}, transcript.Config{ReadConcurrency: 1})
	res, err := r.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, res.Entries, 1, "the vanished segment is gone; the read re-listed instead of failing")
}

func TestStore_ReadAll_Corrupt(t *testing.T) {
	ctx := context.Background()
	mem := membucket.New()
	s := newStore(t, mem, transcript.Config{})
	w := newWriter(t, "w")
	good, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", "")}, w)
	require.NoError(t, err)
	obj, err := s.PrepareSegment(ref, [][]byte{entry("b", "a")}, w)
	require.NoError(t, err)
	data := bytes.Clone(obj.Data)
	data[len(data)-3] ^= 0xff
	require.NoError(t, mem.Put(ctx, obj.Info.Key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))

	_, err = s.ReadAll(ctx, ref)
	require.ErrorIs(t, err, segment.ErrCorrupt)
	require.ErrorContains(t, err, obj.Info.Key)

	lenient := newStore(t, mem, transcript.Config{SkipCorrupt: true})
	res, err := lenient.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(res))
	require.Len(t, res.Corrupt, 1)
	require.Equal(t, obj.Info.Key, res.Corrupt[0].Key)
	require.Equal(t, good.Key, res.Segments[0].Key)
}

func TestStore_PutSegment_Idempotent(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	obj, err := s.PrepareSegment(ref, [][]byte{entry("a", "")}, newWriter(t, "w"))
	require.NoError(t, err)
	require.NoError(t, s.PutSegment(ctx, obj.Info.Key, obj.Data))
	require.NoError(t, s.PutSegment(ctx, obj.Info.Key, obj.Data), "a retry of the same bytes succeeds")
	other := bytes.Clone(obj.Data)
	other[len(other)-1] ^= 1
	require.ErrorIs(t, s.PutSegment(ctx, obj.Info.Key, other), bucket.ErrExists)
	require.ErrorIs(t, s.PutSegment(ctx, "not/a/segment", obj.Data), transcript.ErrNotSegmentKey)
}

// TestStore_SegmentReadableByZstdCLI checks the promise that any standard tool can
// recover a bucket: `zstd -dc` of a stored segment prints exactly its entries.
func TestStore_SegmentReadableByZstdCLI(t *testing.T) {
	zstdBin, err := exec.LookPath("zstd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("zstd command-line tool not installed")
		}
		t.Skip("zstd command-line tool not installed")
	}
	ctx := context.Background()
	dir := t.TempDir()
	fb, err := filebucket.New(dir)
	require.NoError(t, err)
	s := newStore(t, fb, transcript.Config{Prefix: "bucket-prefix"})
	entries := [][]byte{entry("a", ""), entry("b", "a"), []byte(`{"type":"custom","id":"c","parentId":"b","data":{"ü":"\u00fc 😀"}}`)}
	info, err := s.AppendSegment(ctx, ref, entries, newWriter(t, "w"))
	require.NoError(t, err)

	out, err := exec.CommandContext(ctx, zstdBin, "-dc", filepath.Join(dir, filepath.FromSlash(info.Key))).Output()
	require.NoError(t, err)
	require.Equal(t, string(bytes.Join(entries, []byte("\n")))+"\n", string(out))
}

// unreadable fails every Get, as a bucket that cannot be reached for the check.
type unreadable struct{ bucket.Bucket }

func (unreadable) Get(context.Context, string) (io.ReadCloser, bucket.ObjectInfo, error) {
	return nil, bucket.ObjectInfo{}, fmt.Errorf("connection reset")
}

// TestStore_PutSegment_ConflictByBytes: an object stored without checksum metadata
// (copied in by a tool that drops it) is recognised by its bytes; when the bytes
// cannot be read the error is transient, never a conflict.
func TestStore_PutSegment_ConflictByBytes(t *testing.T) {
	ctx := context.Background()
	mem := membucket.New()
	s := newStore(t, mem, transcript.Config{})
	obj, err := s.PrepareSegment(ref, [][]byte{entry("a", "")}, newWriter(t, "w"))
	require.NoError(t, err)
	require.NoError(t, mem.Put(ctx, obj.Info.Key, bytes.NewReader(obj.Data), int64(len(obj.Data)), bucket.PutOptions{}))

	require.NoError(t, s.PutSegment(ctx, obj.Info.Key, obj.Data), "same bytes: our own earlier write")

	blind := newStore(t, unreadable{mem}, transcript.Config{})
	err = blind.PutSegment(ctx, obj.Info.Key, obj.Data)
	require.Error(t, err)
	require.NotErrorIs(t, err, bucket.ErrExists)
}

func TestMergeResult_DanglingAndMissing(t *testing.T) {
	cases := []struct {
		name     string
		entries  [][]byte
		want     []string
		dangling []string
		missing  []string
	}{
		{"closed", [][]byte{entry("a", ""), entry("b", "a")}, []string{"a", "b"}, nil, nil},
		{"orphan", [][]byte{entry("a", ""), entry("c", "b")}, []string{"a", "b"}, []string{"c"}, []string{"b"}},
		{"nothing wanted", [][]byte{entry("a", "")}, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, membucket.New(), transcript.Config{})
			_, err := s.AppendSegment(context.Background(), ref, tc.entries, newWriter(t, "w"))
			require.NoError(t, err)
			res, err := s.ReadAll(context.Background(), ref)
			require.NoError(t, err)
			var dangling []string
			for _, e := range res.Dangling() {
				dangling = append(dangling, e.ID)
			}
			require.Equal(t, tc.dangling, dangling)
			require.Equal(t, tc.missing, res.Missing(tc.want))
		})
	}
}

// TestStore_ReadVanishedIsNotMissing: a read that keeps meeting vanished segments
// fails with ErrVanished, never with bucket.ErrNotFound, so no reader takes a session that
// exists for one that does not (and starts it again with a second header).
func TestStore_ReadVanishedIsNotMissing(t *testing.T) {
	ctx := context.Background()
	mem := membucket.New()
	appendChain(t, newStore(t, mem, transcript.Config{}), ref, newWriter(t, "w"), "e", "", 3)
	r := newStore(t, alwaysVanishing{mem}, transcript.Config{MaxRelists: 2})
	for name, read := range map[string]func() error{
		"ReadAll":  func() error { _, err := r.ReadAll(ctx, ref); return err },
		"ReadNew":  func() error { _, err := r.ReadNew(ctx, ref, transcript.SegmentSet{}); return err },
		"ReadLean": func() error { _, err := r.ReadLean(ctx, ref); return err },
	} {
		err := read()
		require.ErrorIs(t, err, transcript.ErrVanished, name)
		require.NotErrorIs(t, err, bucket.ErrNotFound, name)
	}
}
