package transcript_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// payloadCounter is a bucket that counts the GETs and PUTs of payload objects.
type payloadCounter struct {
	bucket.Bucket
	mu         sync.Mutex
	gets, puts int
}

func (b *payloadCounter) count(key string, n *int) {
	if strings.Contains(key, "/payloads/") {
		b.mu.Lock()
		*n++
		b.mu.Unlock()
	}
}

func (b *payloadCounter) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	b.count(key, &b.gets)
	return b.Bucket.Get(ctx, key)
}

func (b *payloadCounter) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b.count(key, &b.gets)
	return b.Bucket.GetRange(ctx, key, off, n)
}

func (b *payloadCounter) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	b.count(key, &b.puts)
	return b.Bucket.Put(ctx, key, r, size, opts)
}

// take returns the counts so far and starts again from zero.
func (b *payloadCounter) take() (gets, puts int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	gets, puts = b.gets, b.puts
	b.gets, b.puts = 0, 0
	return gets, puts
}

// TestAppendStored_CopiesReferences: a fork written from a Stored read (within the
// namespace, and into another one) reads back byte for byte; within the namespace
// it fetches and stores no payload object, into another it copies each distinct
// payload once; the fork's segments keep references.
func TestAppendStored_CopiesReferences(t *testing.T) {
	img := imageData(21, 3*testThreshold)
	text := "out\n" + strings.Repeat("tool output ", testThreshold/4)
	want := [][]byte{entry("a", ""), imageEntry("b", "a", img), toolEntry("c", "b", text), entry("d", "c"), imageEntry("e", "d", img)}
	for name, newBucket := range testBackends() {
		for _, tc := range []struct {
			name      string
			namespace string
			gets      int // payload objects fetched by the fork
		}{
			{"same namespace", ref.Namespace, 0},
			{"other namespace", "elsewhere", 2},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				b := &payloadCounter{Bucket: newBucket(t)}
				s := newStore(t, b, transcript.Config{Prefix: "p", PayloadThreshold: testThreshold})
				w := newWriter(t, "w1")
				for _, batch := range [][][]byte{want[:2], want[2:]} {
					_, err := s.AppendSegment(ctx, ref, batch, w)
					require.NoError(t, err)
				}
				b.take()

				res, err := s.Stored().ReadAll(ctx, ref)
				require.NoError(t, err)
				fork := transcript.TranscriptRef{Namespace: tc.namespace, AgentID: ref.AgentID, SessionID: "fork"}
				infos, err := s.AppendStored(ctx, fork, ref.Namespace, res.Entries, newWriter(t, "w2"))
				require.NoError(t, err)
				require.Len(t, infos, 1)
				gets, puts := b.take()
				require.Equal(t, tc.gets, gets, "payload GETs of the fork")
				require.Equal(t, tc.gets, puts, "payload PUTs of the fork")

				requireEveryRead(t, s, fork, want)
				stored, err := s.Stored().ReadAll(ctx, fork)
				require.NoError(t, err)
				require.Len(t, stored.Entries[1].Refs, 1, "the fork's segment keeps the reference")
				require.Len(t, stored.Entries[4].Refs, 1)
				require.Len(t, payloadKeys(t, b, "p/", tc.namespace), 2, "each payload once in the fork's namespace")
				seg, err := s.Stored().ReadSegment(ctx, infos[0].Key)
				require.NoError(t, err)
				require.Equal(t, infos[0].Hash, transcript.KeyChecksum(seg.Meta), "the key names the checksum the segment records")
			})
		}
	}
}

// TestAppendStored_MarkedPayloadWrittenInline: a fork that meets a payload marked
// for deletion (its source session deleted) writes it inline, read from the
// source's object; the collector then deletes the object and the fork still reads
// byte for byte.
func TestAppendStored_MarkedPayloadWrittenInline(t *testing.T) {
	ctx := context.Background()
	s := gcStore(t, newBucket(t))
	want, res := readThenDelete(t, s, 22)
	gc, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
	require.NoError(t, err)
	require.Equal(t, 1, gc.Marked)

	fork := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "fork"}
	_, err = s.AppendStored(ctx, fork, ref.Namespace, res.Entries, newWriter(t, "w2"))
	require.NoError(t, err)
	stored, err := s.Stored().ReadAll(ctx, fork)
	require.NoError(t, err)
	require.Empty(t, stored.Entries[1].Refs, "a marked payload is written inline")
	gc, err = s.CollectPayloads(ctx, ref.Namespace, gcNow)
	require.NoError(t, err)
	require.Equal(t, 1, gc.Deleted)
	requireEveryRead(t, s, fork, want)
}

// TestPayloadGC_ForkDuringTheMarkWindowSurvives: a fork copies the reference to a
// payload whose only other referrer was deleted; the collector marks the payload
// after the fork's check and before its segment lands, and its next run, which
// would delete it, sees the fork's segment: the payload stays and the fork reads
// byte for byte.
func TestPayloadGC_ForkDuringTheMarkWindowSurvives(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			hook := &segmentPutHook{Bucket: newBucket(t)}
			s := gcStore(t, hook)
			want, res := readThenDelete(t, s, 23)
			hook.before = func() {
				res, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
				require.NoError(t, err)
				require.Equal(t, 1, res.Marked, "no segment references the payload yet")
			}
			fork := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "fork"}
			_, err := s.AppendStored(ctx, fork, ref.Namespace, res.Entries, newWriter(t, "w2"))
			require.NoError(t, err)
			stored, err := s.Stored().ReadAll(ctx, fork)
			require.NoError(t, err)
			require.Len(t, stored.Entries[1].Refs, 1, "the fork relied on the payload")

			gc, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 0, gc.Deleted)
			require.Equal(t, 1, gc.Unmarked)
			requireNoPayloadMarks(t, hook, ref.Namespace)
			requireEveryRead(t, s, fork, want)
		})
	}
}

// readThenDelete writes a session ref holding an image drawn from seed, reads it
// as stored and deletes it: its entries as written, and as a fork would copy them
// (their only other referrer gone).
func readThenDelete(t *testing.T, s *transcript.Store, seed uint64) ([][]byte, *transcript.MergeResult) {
	t.Helper()
	ctx := context.Background()
	want := [][]byte{entry("a", ""), imageEntry("b", "a", imageData(seed, 2*testThreshold))}
	_, err := s.AppendSegment(ctx, ref, want, newWriter(t, "w1"))
	require.NoError(t, err)
	res, err := s.Stored().ReadAll(ctx, ref)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, ref))
	return want, res
}

// TestSameShape: an entry as written has the shape of its stored form and of no
// other (other bytes outside the payload, another size).
func TestSameShape(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{PayloadThreshold: testThreshold})
	img := imageData(24, 2*testThreshold)
	raw := imageEntry("b", "a", img)
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", ""), raw}, newWriter(t, "w1"))
	require.NoError(t, err)
	res, err := s.Stored().ReadAll(ctx, ref)
	require.NoError(t, err)
	e := res.Entries[1]
	require.Len(t, e.Refs, 1)
	for _, tc := range []struct {
		name string
		raw  []byte
		want bool
	}{
		{"as written", raw, true},
		{"other payload of the same size", imageEntry("b", "a", imageData(25, len(img))), true},
		{"other parent", imageEntry("b", "x", img), false},
		{"shorter payload", imageEntry("b", "a", img[1:]), false},
		{"longer payload", imageEntry("b", "a", img+"A"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, transcript.SameShape(tc.raw, e.Raw, e.Refs))
		})
	}
}

// TestStoredForm: the references a write reports (SegmentInfo.Refs) and those a
// read that puts the payloads back keeps (Entry.Resolved) are the ones a Stored
// read returns, and StoredForm turns each entry as written back into its stored
// bytes with them, reading nothing; references that do not fit the entry give
// false.
func TestStoredForm(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{PayloadThreshold: testThreshold})
	shared := imageData(31, 2*testThreshold)
	two := []byte(`{"type":"message","id":"d","parentId":"c","message":{"role":"user","content":[{"type":"image","data":"` +
		shared + `"},{"type":"text","text":"and \"this\""},{"type":"image","data":"` + imageData(32, 3*testThreshold) + `"}]}}`)
	written := [][]byte{
		entry("a", ""),
		imageEntry("b", "a", shared),
		toolEntry("c", "b", strings.Repeat("line \"quoted\"\n\tand more ", 200)),
		two,
		entry("e", "d"),
	}
	info, err := s.AppendSegment(ctx, ref, written, newWriter(t, "w1"))
	require.NoError(t, err)
	stored, err := s.Stored().ReadAll(ctx, ref)
	require.NoError(t, err)
	resolved, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, stored.Entries, len(written))
	require.Len(t, resolved.Entries, len(written))
	sameRefs := func(want, got []transcript.PayloadRef, id string) {
		require.Len(t, got, len(want), id)
		for k := range want {
			require.Equal(t, want[k].Hash, got[k].Hash, id)
			require.Equal(t, want[k].Off, got[k].Off, id)
			require.Equal(t, want[k].Size, got[k].Size, id)
		}
	}
	refs := 0
	for i, st := range stored.Entries {
		rs := resolved.Entries[i]
		require.Equal(t, st.ID, rs.ID)
		require.Equal(t, string(written[st.Pos]), string(rs.Raw), "the read puts the payloads back")
		require.Empty(t, rs.Refs)
		sameRefs(st.Refs, rs.Resolved, st.ID)
		sameRefs(st.Refs, info.EntryRefs(st.Pos), st.ID)
		got, ok := transcript.StoredForm(rs.Raw, rs.Resolved)
		require.True(t, ok, st.ID)
		require.Equal(t, string(st.Raw), string(got), st.ID)
		refs += len(st.Refs)
	}
	require.Equal(t, 4, refs, "b, c and d's two payloads are references")

	d := resolved.Entries[slices.IndexFunc(resolved.Entries, func(e transcript.Entry) bool { return e.ID == "d" })]
	require.Len(t, d.Resolved, 2)
	for _, tc := range []struct {
		name string
		raw  []byte
		refs func([]transcript.PayloadRef)
	}{
		{"entry cut short", d.Raw[:len(d.Raw)-int(d.Resolved[1].Size)], nil},
		{"a reference past the end", d.Raw, func(r []transcript.PayloadRef) { r[1].Off = uint32(len(d.Raw)) }},
		{"a payload past the end", d.Raw, func(r []transcript.PayloadRef) { r[1].Size += uint64(len(d.Raw)) }},
		{"references out of order", d.Raw, func(r []transcript.PayloadRef) { r[0], r[1] = r[1], r[0] }},
		{"a huge size", d.Raw, func(r []transcript.PayloadRef) { r[0].Size = 1 << 63 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refs := slices.Clone(d.Resolved)
			if tc.refs != nil {
				tc.refs(refs)
			}
			_, ok := transcript.StoredForm(tc.raw, refs)
			require.False(t, ok)
		})
	}
}

// FuzzStoredForm: StoredForm never panics, and whatever it accepts is the
// entry with each payload's bytes replaced by its reference's text.
func FuzzStoredForm(f *testing.F) {
	f.Add([]byte(`{"data":"0123456789abcdef"}`), uint32(9), uint64(16), uint32(80), uint64(1))
	f.Add([]byte(`{"a":"xy","b":"z"}`), uint32(6), uint64(2), uint32(76), uint64(1))
	f.Add([]byte(`{}`), uint32(0), uint64(0), uint32(0), uint64(0))
	f.Fuzz(func(t *testing.T, raw []byte, off1 uint32, size1 uint64, off2 uint32, size2 uint64) {
		refs := []transcript.PayloadRef{{Off: off1, Size: size1, Hash: [32]byte{1}}, {Off: off2, Size: size2, Hash: [32]byte{2}}}
		got, ok := transcript.StoredForm(raw, refs)
		if !ok {
			return
		}
		require.True(t, transcript.SameShape(raw, got, refs), "the stored form has the shape of the entry")
		for _, r := range refs {
			require.Equal(t, string(segment.RefText(r.Hash)), string(got[r.Off:int(r.Off)+segment.RefLen]))
		}
	})
}
