package transcript_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// testThreshold is the payload threshold of the payload tests: small, so that
// their entries stay small.
const testThreshold = 1 << 10

// imageData returns n bytes of base64 drawn from seed, as an image block holds.
func imageData(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	raw := make([]byte, n*3/4+3)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// imageEntry returns a user message of id holding an image of data.
func imageEntry(id, parent, data string) []byte {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":%q,"mimeType":"image/png"}]}}`, id, p, data))
}

// toolEntry returns a tool result of id whose text is text (written as JSON, so
// its escapes are part of the payload).
func toolEntry(id, parent, text string) []byte {
	return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-09-25T22:29:11.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":%q}],"isError":false}}`, id, parent, text))
}

// payloadKeys returns the hex hashes of the payload objects of namespace ns.
func payloadKeys(t *testing.T, b bucket.Bucket, prefix, ns string) []string {
	t.Helper()
	var out []string
	p := prefix + ns + "/payloads/"
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{Prefix: p}, func(oi bucket.ObjectInfo) error {
		if rest := strings.TrimPrefix(oi.Key, p); !strings.Contains(rest, "/") {
			out = append(out, strings.TrimSuffix(rest, ".zst"))
		}
		return nil
	}))
	return out
}

// hashHex returns the hex SHA-256 of s.
func hashHex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// requireEveryRead checks that every read of ref returns want, byte for byte, in
// order: ReadAll, ReadLean, ReadNew from nothing, ReadSegment of each segment
// (their union) and the Listed readers.
func requireEveryRead(t *testing.T, s *transcript.Store, r transcript.TranscriptRef, want [][]byte) {
	t.Helper()
	ctx := context.Background()
	res, err := s.ReadAll(ctx, r)
	require.NoError(t, err)
	require.Equal(t, want, res.Raw(), "ReadAll")
	require.Empty(t, res.Conflicts, "ReadAll")

	lean, err := s.ReadLean(ctx, r)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, lean.WriteJSONL(&buf))
	require.Equal(t, string(bytes.Join(want, []byte("\n")))+"\n", buf.String(), "ReadLean")

	inc, err := s.ReadNew(ctx, r, transcript.SegmentSet{})
	require.NoError(t, err)
	require.Equal(t, want, inc.Raw(), "ReadNew")

	byID := map[string][]byte{}
	for _, info := range res.Segments {
		seg, err := s.ReadSegment(ctx, info.Key)
		require.NoError(t, err)
		require.Nil(t, seg.Meta.Refs, "ReadSegment puts the payloads back")
		for _, raw := range seg.Entries {
			e, err := transcript.ParseEntry(raw)
			require.NoError(t, err)
			byID[e.ID] = raw
		}
	}
	for _, w := range want {
		e, err := transcript.ParseEntry(w)
		require.NoError(t, err)
		require.Equal(t, string(w), string(byID[e.ID]), "ReadSegment of %s", e.ID)
	}

	seen := 0
	require.NoError(t, s.ForEachListedSession(ctx, r.Namespace, r.AgentID, 2, func(ctx context.Context, l *transcript.Listed) error {
		if l.Ref().SessionID != r.SessionID {
			return nil
		}
		seen++
		inc, err := l.ReadNew(ctx, l.Ref(), transcript.SegmentSet{})
		require.NoError(t, err)
		require.Equal(t, want, inc.Raw(), "Listed.ReadNew")
		lean, err := l.ReadLean(ctx, l.Ref())
		require.NoError(t, err)
		for i, w := range want {
			require.Equal(t, string(w), string(lean.Raw(i)), "Listed.ReadLean")
		}
		return nil
	}))
	require.Equal(t, 1, seen)
}

// TestPayload_StoredOnceReadBack writes entries holding large payloads through every
// write path (AppendSegment, AppendSegments, and PrepareSegment then PutSegment, as
// the mirror does) on every backend: every read returns them byte for byte, the segment holds
// references (what zstd -dc prints), each distinct payload is one object of the
// namespace whatever the session, and a Stored read returns the references.
func TestPayload_StoredOnceReadBack(t *testing.T) {
	img := imageData(1, 3*testThreshold)
	text := "line one\n\"quoted\"\ttab " + strings.Repeat("output ", testThreshold/4)
	small := imageData(2, testThreshold/2)
	for name, newBucket := range testBackends() {
		for _, path := range []string{"append", "appends", "prepare+put"} {
			t.Run(name+"/"+path, func(t *testing.T) {
				ctx := context.Background()
				b := newBucket(t)
				s := newStore(t, b, transcript.Config{Prefix: "p", PayloadThreshold: testThreshold})
				w := newWriter(t, "w1")
				want := [][]byte{entry("a", ""), imageEntry("b", "a", img), toolEntry("c", "b", text), imageEntry("d", "c", small), imageEntry("e", "d", img)}
				var infos []transcript.SegmentInfo
				for _, batch := range [][][]byte{want[:2], want[2:]} {
					switch path {
					case "append":
						info, err := s.AppendSegment(ctx, ref, batch, w)
						require.NoError(t, err)
						infos = append(infos, info)
						continue
					case "appends":
						got, err := s.AppendSegments(ctx, ref, batch, w)
						require.NoError(t, err)
						require.Len(t, got, 1)
						infos = append(infos, got...)
						continue
					}
					obj, err := s.PrepareSegment(ref, batch, w)
					require.NoError(t, err)
					require.NoError(t, s.PutSegment(ctx, obj.Info.Key, obj.Data))
					require.NoError(t, s.PutSegment(ctx, obj.Info.Key, obj.Data), "a retry of the same segment succeeds")
					infos = append(infos, obj.Info)
				}
				requireEveryRead(t, s, ref, want)

				// The same image in another session is not stored again.
				other := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: "other", SessionID: "s2"}
				_, err := s.AppendSegment(ctx, other, [][]byte{imageEntry("x", "", img)}, w)
				require.NoError(t, err)
				wantText, err := jsonContents(text)
				require.NoError(t, err)
				require.ElementsMatch(t, []string{hashHex(img), hashHex(wantText)}, payloadKeys(t, b, "p/", ref.Namespace))

				// The segments hold references; zstd -dc prints them.
				var stored []byte
				for _, info := range infos {
					rc, _, err := b.Get(ctx, info.Key)
					require.NoError(t, err)
					data, err := io.ReadAll(rc)
					require.NoError(t, rc.Close())
					require.NoError(t, err)
					plain := zstdDecode(t, data)
					stored = append(stored, plain...)
					require.Less(t, len(data), testThreshold*2, "the payloads are not in the segment")
				}
				require.NotContains(t, string(stored), img)
				require.Contains(t, string(stored), `"data":"`+segment.RefPrefix+hashHex(img)+`"`)
				require.Contains(t, string(stored), small, "a payload under the threshold stays inline")

				// A Stored read returns the references and fetches no payload.
				res, err := s.Stored().ReadAll(ctx, ref)
				require.NoError(t, err)
				require.Len(t, res.Entries, len(want))
				require.Len(t, res.Entries[1].Refs, 1)
				require.Equal(t, uint64(len(img)), res.Entries[1].Refs[0].Size)
				require.Contains(t, string(res.Entries[1].Raw), segment.RefPrefix)
			})
		}
	}
}

// jsonContents returns the contents of s written as a JSON string (escapes
// included), which is the payload a text of s gives.
func jsonContents(s string) (string, error) {
	q := fmt.Sprintf("%q", s)
	if strings.ContainsAny(s, "\x7f") {
		return "", fmt.Errorf("not a plain string")
	}
	return q[1 : len(q)-1], nil
}

// zstdDecode decompresses data as any zstd tool would (skipping the metadata
// frame).
func zstdDecode(t *testing.T, data []byte) []byte {
	t.Helper()
	d, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer d.Close()
	out, err := d.DecodeAll(data, nil)
	require.NoError(t, err)
	return out
}

// TestPayload_CompactionCopiesReferences compacts a session whose entries hold
// payloads, written by a writer that takes them out and by one that keeps them
// inline: the output keeps references (no payload in the segment), one entry
// stored both ways is one entry (no conflict), and every read is unchanged.
func TestPayload_CompactionCopiesReferences(t *testing.T) {
	img := imageData(3, 4*testThreshold)
	text := strings.Repeat("build log line\n", testThreshold/8)
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := newBucket(t)
			s := newStore(t, b, transcript.Config{PayloadThreshold: testThreshold})
			inline := newStore(t, b, transcript.Config{PayloadThreshold: -1})
			w1, w2 := newWriter(t, "w1"), newWriter(t, "w2")
			want := [][]byte{entry("a", ""), imageEntry("b", "a", img), toolEntry("c", "b", text), entry("d", "c")}
			_, err := s.AppendSegment(ctx, ref, want[:2], w1)
			require.NoError(t, err)
			_, err = inline.AppendSegment(ctx, ref, want[1:3], w2) // b again, stored inline
			require.NoError(t, err)
			_, err = s.AppendSegment(ctx, ref, want[2:], w1)
			require.NoError(t, err)
			requireEveryRead(t, s, ref, want)

			res, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.Equal(t, 1, res.SegmentsOut())
			requireEveryRead(t, s, ref, want)
			segs, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			require.Len(t, segs, 1)
			require.Equal(t, 1, segs[0].Level)
			seg, err := s.Stored().ReadSegment(ctx, segs[0].Key)
			require.NoError(t, err)
			require.Len(t, seg.Meta.Refs, 1, "the compaction copies the reference of b, and c stays inline as w2 wrote it")
			require.Less(t, segs[0].Size, int64(len(img)), "no image in the compacted segment")
			require.Len(t, payloadKeys(t, b, "", ref.Namespace), 2)
		})
	}
}

// TestPayload_ConflictsStillSeen: two versions of one id that differ, as written,
// in their payload or around it are a conflict, whichever way each was stored;
// the loser is returned byte for byte too.
func TestPayload_ConflictsStillSeen(t *testing.T) {
	ctx := context.Background()
	b := newBucket(t)
	s := newStore(t, b, transcript.Config{PayloadThreshold: testThreshold})
	inline := newStore(t, b, transcript.Config{PayloadThreshold: -1})
	img1, img2 := imageData(4, 2*testThreshold), imageData(5, 2*testThreshold)
	first, second := imageEntry("b", "a", img1), imageEntry("b", "a", img2)
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", ""), first}, newWriter(t, "w1"))
	require.NoError(t, err)
	_, err = inline.AppendSegment(ctx, ref, [][]byte{second}, newWriter(t, "w2"))
	require.NoError(t, err)
	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, [][]byte{entry("a", ""), first}, res.Raw())
	require.Len(t, res.Losers, 1)
	require.Equal(t, string(second), string(res.Losers[0].Raw))
}

// newBucket returns a fresh memory bucket.
func newBucket(t *testing.T) bucket.Bucket { t.Helper(); return testBackends()["mem"](t) }

// TestPayload_ReadNewIncrementally: an incremental read (what a replica's Pull
// does) returns the new entries with their payloads put back, before and after a
// compaction.
func TestPayload_ReadNewIncrementally(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{PayloadThreshold: testThreshold})
	w := newWriter(t, "w1")
	img1, img2 := imageData(20, 2*testThreshold), imageData(21, 2*testThreshold)
	first := [][]byte{entry("a", ""), imageEntry("b", "a", img1)}
	_, err := s.AppendSegment(ctx, ref, first, w)
	require.NoError(t, err)
	inc, err := s.ReadNew(ctx, ref, transcript.SegmentSet{})
	require.NoError(t, err)
	require.Equal(t, first, inc.Raw())
	second := [][]byte{imageEntry("c", "b", img2)}
	_, err = s.AppendSegment(ctx, ref, second, w)
	require.NoError(t, err)
	next, err := s.ReadNew(ctx, ref, inc.Have)
	require.NoError(t, err)
	require.Equal(t, second, next.Raw())
	_, err = s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	third := [][]byte{imageEntry("d", "c", img1)}
	_, err = s.AppendSegment(ctx, ref, third, w)
	require.NoError(t, err)
	last, err := s.ReadNew(ctx, ref, next.Have)
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range last.Entries {
		got[e.ID] = string(e.Raw)
	}
	require.Equal(t, string(third[0]), got["d"])
	for _, e := range last.Entries {
		require.Empty(t, e.Refs)
		require.NotContains(t, string(e.Raw), segment.RefPrefix)
	}
}

// TestPayload_ReadCommitted reads a strict session that holds large payloads
// through its head, whole and then what a second commit added: the entries come
// back byte for byte, as from every other read (a Stored store keeps the
// references).
func TestPayload_ReadCommitted(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{PayloadThreshold: testThreshold})
	w := newWriter(t, "w1")
	img := imageData(30, 2*testThreshold)
	first := [][]byte{entry("a", ""), imageEntry("b", "a", img)}
	_, h, err := s.CreateSession(ctx, ref, first, w, transcript.CreateOptions{Strict: true, Head: "b"})
	require.NoError(t, err)
	h, inc, err := s.ReadCommitted(ctx, ref, h, transcript.SegmentSet{})
	require.NoError(t, err)
	require.Equal(t, first, inc.Raw())

	second := [][]byte{toolEntry("c", "b", imageData(31, 2*testThreshold))}
	_, h2, err := s.CommitSegment(ctx, ref, h, second, w, "c", nil)
	require.NoError(t, err)
	_, next, err := s.ReadCommitted(ctx, ref, h2, inc.Have)
	require.NoError(t, err)
	require.Equal(t, second, next.Raw())

	_, stored, err := s.Stored().ReadCommitted(ctx, ref, h2, transcript.SegmentSet{})
	require.NoError(t, err)
	refs := 0
	for _, e := range stored.Entries {
		refs += len(e.Refs)
	}
	require.Equal(t, 2, refs, "a Stored read keeps the references")
}
