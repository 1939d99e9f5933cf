package reliability_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// craftedKey returns a valid segment key of ref (no store prefix) naming hash.
func craftedKey(t testing.TB, ref transcript.TranscriptRef, level int, seq uint64, hash uint64) string {
	t.Helper()
	ref = ref.Norm()
	key := fmt.Sprintf("%s/%s/%s/L%d/20260102T030405.%09dZ-evil-%016x-%016x%s",
		ref.Namespace, ref.AgentID, ref.SessionID, level, seq, seq, hash, transcript.SegmentExt)
	_, err := transcript.ParseKey("", key)
	require.NoError(t, err, key)
	return key
}

// putCrafted stores entries in b as a segment of ref that meta describes (its
// level and sequence number in its key, as any writer of the bucket could name
// it) and returns its key.
func putCrafted(ctx context.Context, t testing.TB, b bucket.Bucket, ref transcript.TranscriptRef, meta segment.Meta, entries ...string) string {
	t.Helper()
	data, m := encodeRaw(t, meta, entries...)
	key := craftedKey(t, ref, int(meta.Level), meta.Seq, m.Checksum)
	require.NoError(t, b.Put(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
	return key
}

// encodeRaw encodes entries with meta, as any writer of the bucket could.
func encodeRaw(t testing.TB, meta segment.Meta, entries ...string) ([]byte, segment.Meta) {
	t.Helper()
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	raws := make([][]byte, len(entries))
	for i, e := range entries {
		raws[i] = []byte(e)
	}
	data, m, err := enc.Encode(meta, raws)
	require.NoError(t, err)
	return data, m
}

// rewriteMeta edits the metadata frame of a segment and re-seals it with a valid
// meta checksum: metadata that lies, but lies consistently.
func rewriteMeta(data []byte, edit func(frame []byte)) []byte {
	out := bytes.Clone(data)
	l := int(binary.LittleEndian.Uint32(out[4:8]))
	frame := out[:8+l]
	edit(frame)
	binary.LittleEndian.PutUint64(frame[8+l-8:], xxhash.Sum64(frame[:8+l-8]))
	return out
}

// rleBomb returns a zstd frame that inflates to n bytes of 'x' (n a multiple of
// 128 KiB) from about n/32768 bytes: RLE blocks.
func rleBomb(n int) []byte {
	const block = 128 << 10
	out := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38} // magic, no content size, 128 KiB window
	for i := 0; i < n/block; i++ {
		h := uint32(block)<<3 | 1<<1 // RLE block
		if i == n/block-1 {
			h |= 1 // last block
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16), 'x')
	}
	return out
}

const (
	okEntry  = `{"type":"message","id":"ok1","parentId":null,"message":{"role":"user","content":"fine"}}`
	okEntry2 = `{"type":"message","id":"ok2","parentId":"ok1","message":{"role":"user","content":"fine too"}}`
)

// TestHostile_Segments: objects that a hostile or
// broken writer of the bucket could store under valid segment keys. Each is
// detected (a typed error, or reported in MergeResult) or harmless, never a
// panic, never an unbounded allocation, and never hides another segment's entries.
func TestHostile_Segments(t *testing.T) {
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "hostile"}
	type stored struct {
		key  string
		data []byte
	}
	honest := func(t *testing.T, seq uint64, entries ...string) stored {
		data, m := encodeRaw(t, segment.Meta{WriterID: "evil", Seq: seq}, entries...)
		return stored{craftedKey(t, ref, 0, seq, m.Checksum), data}
	}
	cases := []struct {
		name    string
		objects func(t *testing.T) []stored
		check   func(t *testing.T, res *transcript.MergeResult, err error)
	}{
		{"duplicate ids with different bytes", func(t *testing.T) []stored {
			return []stored{honest(t, 1, okEntry), honest(t, 2, strings.Replace(okEntry, "fine", "FAKE", 1))}
		}, func(t *testing.T, res *transcript.MergeResult, err error) {
			require.NoError(t, err)
			require.Len(t, res.Entries, 1)
			require.Equal(t, okEntry, string(res.Entries[0].Raw), "the first in key order is kept")
			require.Len(t, res.Conflicts, 1)
		}},
		{"parent cycles", func(t *testing.T) []stored {
			return []stored{honest(t, 1,
				`{"type":"message","id":"x","parentId":"y"}`, `{"type":"message","id":"y","parentId":"x"}`,
				`{"type":"message","id":"z","parentId":"z"}`)}
		}, func(t *testing.T, res *transcript.MergeResult, err error) {
			require.NoError(t, err)
			require.Len(t, res.Entries, 3)
			require.NotZero(t, res.Cycles)
		}},
		{"dangling parent", func(t *testing.T) []stored {
			return []stored{honest(t, 1, `{"type":"message","id":"orphan","parentId":"never-written"}`)}
		}, func(t *testing.T, res *transcript.MergeResult, err error) {
			require.NoError(t, err)
			require.Len(t, res.Entries, 1, "kept, as a root")
			require.Error(t, prefixClosed(res))
		}},
		{"malformed lines and non-UTF-8", func(t *testing.T) []stored {
			return []stored{honest(t, 1, okEntry, `not json`, `[1,2]`, `{"id":7}`, `{"type":"message"}`,
				"{\"type\":\"message\",\"id\":\"bin\xff\xfe\",\"parentId\":null}", "\xff\xfe\xfd")}
		}, func(t *testing.T, res *transcript.MergeResult, err error) {
			require.NoError(t, err)
			ids := entryIDs(res)
			require.True(t, ids["ok1"])
			require.Len(t, res.Invalid, 5, "%v", res.Invalid)
		}},
		{"lying entry count", func(t *testing.T) []stored {
			s := honest(t, 1, okEntry, okEntry2)
			s.data = rewriteMeta(s.data, func(f []byte) { binary.LittleEndian.PutUint32(f[24:], 5) })
			return []stored{s}
		}, requireCorruptRead},
		{"lying raw length (zstd bomb)", func(t *testing.T) []stored {
			s := honest(t, 1, okEntry)
			l := int(binary.LittleEndian.Uint32(s.data[4:8]))
			bomb := rleBomb(1 << 30) // 1 GiB of 'x' in 32 KiB
			data := append(s.data[:8+l:8+l], bomb...)
			data = rewriteMeta(data, func(f []byte) { binary.LittleEndian.PutUint64(f[64:], uint64(len(bomb))) })
			s.data = data
			return []stored{s}
		}, requireCorruptRead},
		{"honest zstd bomb", func(t *testing.T) []stored {
			s := honest(t, 1, okEntry)
			l := int(binary.LittleEndian.Uint32(s.data[4:8]))
			bomb := rleBomb(1 << 30)
			data := append(s.data[:8+l:8+l], bomb...)
			data = rewriteMeta(data, func(f []byte) {
				binary.LittleEndian.PutUint64(f[48:], 1<<30)
				binary.LittleEndian.PutUint64(f[64:], uint64(len(bomb)))
			})
			s.data = data
			return []stored{s}
		}, func(t *testing.T, res *transcript.MergeResult, err error) {
			require.ErrorIs(t, err, segment.ErrTooLarge)
		}},
		{"key names another checksum", func(t *testing.T) []stored {
			data, _ := encodeRaw(t, segment.Meta{WriterID: "evil", Seq: 1}, okEntry)
			return []stored{{craftedKey(t, ref, 0, 1, 0xdeadbeef), data}}
		}, requireCorruptRead},
		{"level-0 segment claiming to supersede another", func(t *testing.T) []stored {
			victim := honest(t, 1, okEntry)
			name := victim.key[strings.LastIndex(victim.key, "/L0/")+1:]
			data, m := encodeRaw(t, segment.Meta{WriterID: "evil", Seq: 2, Inputs: []string{name}}, okEntry2)
			return []stored{victim, {craftedKey(t, ref, 0, 2, m.Checksum), data}}
		}, func(t *testing.T, res *transcript.MergeResult, err error) {
			require.NoError(t, err)
			require.True(t, entryIDs(res)["ok1"], "a level-0 segment must not hide another one's entries")
		}},
		{"metadata level differs from the key", func(t *testing.T) []stored {
			data, m := encodeRaw(t, segment.Meta{WriterID: "evil", Seq: 1, Level: 3}, okEntry)
			return []stored{{craftedKey(t, ref, 0, 1, m.Checksum), data}}
		}, func(t *testing.T, res *transcript.MergeResult, err error) {
			if err != nil {
				require.ErrorIs(t, err, segment.ErrCorrupt)
				return
			}
			require.True(t, entryIDs(res)["ok1"])
		}},
		{"trailing bytes after the zstd data", func(t *testing.T) []stored {
			s := honest(t, 1, okEntry)
			s.data = append(s.data, rleBomb(128<<10)...)
			return []stored{s}
		}, requireCorruptRead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			ctx := ctxTimeout(t, 30*time.Second)
			b := membucket.New()
			store := newStore(t, b, "")
			for _, o := range tc.objects(t) {
				require.NoError(t, b.Put(ctx, o.key, bytes.NewReader(o.data), int64(len(o.data)), bucket.PutOptions{}))
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := readNoPanic(ctx, store, ref)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			require.Less(t, alloc, uint64(300<<20), "reading allocated %d MiB", alloc>>20)
			tc.check(t, res, err)
			// Other sessions of the bucket are unaffected.
			other := transcript.TranscriptRef{AgentID: "a", SessionID: "fine"}
			_, err = store.AppendSegment(ctx, other, [][]byte{[]byte(okEntry)}, transcript.NewRandomWriter())
			require.NoError(t, err)
			got, err := store.ReadAll(ctx, other)
			require.NoError(t, err)
			require.Len(t, got.Entries, 1)
		})
	}
}

func requireCorruptRead(t *testing.T, res *transcript.MergeResult, err error) {
	t.Helper()
	require.Error(t, err)
	require.True(t, typedSegmentError(err), "untyped error %v", err)
}

// readNoPanic reads ref and turns a panic into an error that fails the test.
func readNoPanic(ctx context.Context, store *transcript.Store, ref transcript.TranscriptRef) (res *transcript.MergeResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
			res = nil
		}
	}()
	return store.ReadAll(ctx, ref)
}

// TestHostile_CompactedSegmentLyingAboutInputs: a compacted segment that names an
// input whose entries it lacks. Readers trust a compacted segment's input list (that
// is what saves them the input GETs), so while the input exists they do not see
// its entries; but nothing is lost: Compact checks containment before it marks an
// input, refuses with ErrCompactInput naming the liar, and deletes nothing, and
// `transcript verify` still counts the input's entries.
func TestHostile_CompactedSegmentLyingAboutInputs(t *testing.T) {
	ctx := ctxTimeout(t, 30*time.Second)
	b := membucket.New()
	store := newStore(t, b, "")
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "liar"}
	in, err := store.AppendSegment(ctx, ref, [][]byte{[]byte(okEntry)}, transcript.NewRandomWriter())
	require.NoError(t, err)
	rel := in.Key[strings.LastIndex(in.Key, "/L0/")+1:]
	putCrafted(ctx, t, b, ref, segment.Meta{WriterID: "evil", Seq: 9, Level: 1, Inputs: []string{rel}}, okEntry2)

	_, err = store.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.ErrorIs(t, err, transcript.ErrCompactInput)
	require.Contains(t, err.Error(), "lacks")
	_, err = b.Stat(ctx, in.Key)
	require.NoError(t, err, "the input is not deleted on a liar's word")
	seg, err := store.ReadSegment(ctx, in.Key)
	require.NoError(t, err)
	require.Equal(t, okEntry, string(seg.Entries[0]))
}

// TestHostile_CompactCarriesMalformedValues: a foreign writer stored, in a
// segment that decodes and verifies, entries with an id and a parent whose other
// values JSON does not accept. Readers return them as stored; compaction merges
// them byte for byte (it does not validate a stored entry's values again, as
// readers do not) and the session reads the same after it. An entry without an
// id is still refused, and nothing is deleted.
func TestHostile_CompactCarriesMalformedValues(t *testing.T) {
	cases := []struct {
		name    string
		foreign string
		wantErr error
	}{
		{"bad escape in a string", `{"type":"message","id":"ok2","parentId":"ok1","message":{"content":"\q"}}`, nil},
		{"bare word", `{"type":"message","id":"ok2","parentId":"ok1","usage":tru}`, nil},
		{"trailing comma", `{"type":"message","id":"ok2","parentId":"ok1","tags":[1,2,]}`, nil},
		{"no id", `{"type":"message","parentId":"ok1","usage":tru}`, transcript.ErrCompactInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.False(t, json.Valid([]byte(tc.foreign)), "the case's entry must be malformed")
			ctx := ctxTimeout(t, 30*time.Second)
			b := membucket.New()
			store := newStore(t, b, "")
			ref := transcript.TranscriptRef{AgentID: "a", SessionID: "malformed"}
			in, err := store.AppendSegment(ctx, ref, [][]byte{[]byte(okEntry)}, transcript.NewRandomWriter())
			require.NoError(t, err)
			foreign := putCrafted(ctx, t, b, ref, segment.Meta{WriterID: "evil", Seq: 1}, tc.foreign)
			before, err := store.ReadAll(ctx, ref)
			require.NoError(t, err)

			res, err := store.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				for _, k := range []string{in.Key, foreign} {
					_, err := b.Stat(ctx, k)
					require.NoError(t, err, "no input is deleted")
				}
				return
			}
			require.NoError(t, err)
			require.Len(t, res.Compactions, 1)
			require.Equal(t, 2, res.Deleted)
			after, err := store.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, before.Raw(), after.Raw(), "the session reads the same after compaction")
			require.Contains(t, after.Raw(), []byte(tc.foreign))
			require.Len(t, after.Segments, 1)
			require.Equal(t, 1, after.Segments[0].Level)
		})
	}
}
