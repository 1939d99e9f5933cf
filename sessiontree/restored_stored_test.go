package sessiontree_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// storedThreshold is the payload threshold of these tests: small, so that the
// sessions stay small and every image is a payload.
const storedThreshold = 64

// imageEntry is a user message holding one image per data, as Pi writes one.
func imageEntry(id, parent string, data ...string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	var blocks []string
	for _, d := range data {
		blocks = append(blocks, fmt.Sprintf(`{"type":"image","data":%q,"mimeType":"image/png"}`, d))
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"look"},%s]}}`,
		id, p, strings.Join(blocks, ","))
}

// imageData returns base64-like data of n bytes, distinct for each seed.
func imageData(seed, n int) string {
	b := make([]byte, 0, n)
	for len(b) < n {
		b = fmt.Appendf(b, "iVBOR%d+%d/", seed, len(b))
	}
	return string(b[:n])
}

// storedStore returns a store over a new in-memory bucket that keeps payloads
// of storedThreshold bytes or more outside, and the bucket.
func storedStore(t *testing.T) (bucket.Bucket, *transcript.Store) {
	t.Helper()
	b := membucket.New()
	s, err := transcript.New(transcript.Config{Bucket: b, PayloadThreshold: storedThreshold})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return b, s
}

// storedSession is a session for the tests of WriteRestoredStored: segments of
// entries as handed to a writer, and entries written as stored (crafted
// references, for what no writer makes).
type storedSession struct {
	segments [][]string
	crafted  []craftedEntry // appended after segments, one segment
}

// craftedEntry is an entry as stored: raw holds the reference text of payload
// in place of "REF".
type craftedEntry struct {
	raw, payload string
}

// write stores ss as session sid of s (payload objects of crafted entries put
// straight into b).
func (ss storedSession) write(t *testing.T, s *transcript.Store, b bucket.Bucket, sid string) transcript.TranscriptRef {
	t.Helper()
	ctx := context.Background()
	w, err := transcript.NewWriter("writer")
	require.NoError(t, err)
	ref, err := who.Ref("agent", sid)
	require.NoError(t, err)
	for _, seg := range ss.segments {
		batch := make([][]byte, len(seg))
		for k, e := range seg {
			batch[k] = []byte(e)
		}
		_, err := s.AppendSegment(ctx, ref, batch, w)
		require.NoError(t, err)
	}
	if len(ss.crafted) == 0 {
		return ref
	}
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	var entries []transcript.Entry
	for _, c := range ss.crafted {
		h := sha256.Sum256([]byte(c.payload))
		obj := enc.EncodePayload([]byte(c.payload))
		require.NoError(t, b.Put(ctx, ref.Namespace+"/payloads/"+hex.EncodeToString(h[:])+".zst", bytes.NewReader(obj), int64(len(obj)), bucket.PutOptions{}))
		off := strings.Index(c.raw, "REF")
		raw := c.raw[:off] + string(segment.RefText(h)) + c.raw[off+3:]
		entries = append(entries, transcript.Entry{Raw: []byte(raw), Refs: []segment.PayloadRef{{Off: uint32(off), Size: uint64(len(c.payload)), Hash: h}}})
	}
	_, err = s.AppendStored(ctx, ref, ref.Namespace, entries, w)
	require.NoError(t, err)
	return ref
}

// TestWriteRestoredStored_SameFiles: a session with its payloads outside,
// written from its stored form while the payloads are fetched, gives byte for
// byte the files Restore and a Flush write, those WriteRestoredLean writes from
// the session read with its payloads, and (for what a writer stores) those of
// the same session stored inline; a Tree loaded from them finds nothing new.
// The cases cover the kinds ClassifyRaw tells (entries, "leaf" entries,
// headers, lines a Tree skips), each with and without payloads, payloads
// shared by entries and within one, and sessions no writer of this module
// makes, whose entries classify otherwise once their payloads are put back.
func TestWriteRestoredStored_SameFiles(t *testing.T) {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	header := string(pi.NewHeader("s", ts, "/work", "").Raw())
	img1, img2, img3 := imageData(1, 300), imageData(2, 5000), imageData(3, 70)
	leaf := `{"type":"leaf","id":"l1","parentId":"a2","timestamp":"2026-01-01T00:00:00.000Z","targetId":"a1"}`
	custom := func(id, data string) string {
		return fmt.Sprintf(`{"type":"custom_message","id":%q,"parentId":null,"customType":"x","content":[{"type":"image","data":%q}],"display":true}`, id, data)
	}
	tests := []struct {
		name    string
		ss      storedSession
		crafted bool // no writer stores it: no inline twin
	}{
		{name: "images", ss: storedSession{segments: [][]string{{header, imageEntry("a1", "", img1)}, {imageEntry("a2", "a1", img2), imageEntry("a3", "a2", img3)}}}},
		{name: "shared payloads", ss: storedSession{segments: [][]string{
			{header, imageEntry("a1", "", img1, img1), imageEntry("a2", "a1", img2)},
			{imageEntry("a3", "a2", img1), imageEntry("a4", "a3", img2, img1, img2)}}}},
		{name: "every kind, with and without payloads", ss: storedSession{segments: [][]string{
			{imageEntry("a0", "", img3), header, imageEntry("a1", "", img1), `{"id":"n1","parentId":null}`, custom("c1", img2)},
			{string(pi.NewHeader("other", ts, "/w", "").Raw()), imageEntry("a2", "a1", img2), leaf, `{"type":"session","id":"n3","version":"x"}`}}}},
		{name: "a line a Tree skips holds a payload", crafted: true, ss: storedSession{
			segments: [][]string{{header, imageEntry("a1", "", img1)}},
			crafted:  []craftedEntry{{raw: `{"id":"n6","parentId":null,"data":"REF"}`, payload: img2}}}},
		{name: "no header but in a payload's type", crafted: true, ss: storedSession{
			segments: [][]string{{imageEntry("a1", "", img1)}},
			crafted:  []craftedEntry{{raw: `{"type":"REF","version":3,"id":"h7","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}`, payload: "session"}}}},
		{name: "a payload in an id", crafted: true, ss: storedSession{
			segments: [][]string{{header, imageEntry("a1", "", img1)}},
			crafted:  []craftedEntry{{raw: `{"type":"message","id":"REF","parentId":"a1","message":{"role":"user","content":"x"}}`, payload: "p1"}}}},
		{name: "a payload that is no string's contents", crafted: true, ss: storedSession{
			segments: [][]string{{header, imageEntry("a1", "", img1)}},
			crafted: []craftedEntry{
				{raw: `{"type":"message","id":"n8","parentId":"a1","note":"REF","message":{"role":"user","content":"x"}}`, payload: `x","id":5,"z":"`},
				{raw: `{"type":"message","id":"n9","parentId":"a1","message":{"role":"user","content":"REF"}}`, payload: `y\z`}}}},
	}
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, store := storedStore(t)
			sid := fmt.Sprintf("session-%d", i)
			ref := tc.ss.write(t, store, b, sid)
			stored, err := store.ReadLeanStored(ctx, ref)
			require.NoError(t, err)
			refs := 0
			for k := range stored.Len() {
				refs += len(stored.Refs(k))
			}
			require.Positive(t, refs, "the session holds payloads by reference")

			cfg := sessiontree.Config{Root: t.TempDir(), NoSync: true}
			got, err := sessiontree.WriteRestoredStored(ctx, cfg, who, "agent", sid, stored, store)
			require.NoError(t, err)

			requireAsRestoreAndFlush(t, store, sid, got)

			resolved, err := store.ReadLean(ctx, ref)
			require.NoError(t, err)
			leanCfg := sessiontree.Config{Root: t.TempDir(), NoSync: true}
			lean, err := sessiontree.WriteRestoredLean(leanCfg, who, "agent", sid, resolved)
			require.NoError(t, err)
			require.Equal(t, lean.Entries, got.Entries)
			require.Equal(t, lean.Size, got.Size)
			for _, f := range [][2]string{{lean.Files.Log, got.Files.Log}, {lean.Files.Context, got.Files.Context},
				{lean.Files.Origins, got.Files.Origins}, {lean.Files.Segments, got.Files.Segments}} {
				requireSameFile(t, f[0], f[1])
			}
			entries, err := os.ReadDir(filepath.Dir(got.Files.Log))
			require.NoError(t, err)
			require.Len(t, entries, 4, "the log, the context file, the origins and the segments file, no temporary file")

			loaded, rep, err := sessiontree.Load(ctx, sessiontree.Config{Root: cfg.Root, Store: store, NoSync: true}, who, "agent", sid)
			require.NoError(t, err)
			require.True(t, rep.Clean())
			require.True(t, loaded.SegmentsFileCurrent())
			pulled, err := loaded.Pull(ctx)
			require.NoError(t, err)
			require.Zero(t, pulled.Added)

			if tc.crafted {
				return
			}
			inline, err := transcript.New(transcript.Config{Bucket: membucket.New(), PayloadThreshold: -1})
			require.NoError(t, err)
			defer inline.Close()
			tc.ss.write(t, inline, nil, sid)
			res, err := inline.ReadLeanStored(ctx, ref)
			require.NoError(t, err)
			inCfg := sessiontree.Config{Root: t.TempDir(), NoSync: true}
			in, err := sessiontree.WriteRestoredStored(ctx, inCfg, who, "agent", sid, res, inline)
			require.NoError(t, err)
			requireSameFile(t, in.Files.Log, got.Files.Log)
			requireSameFile(t, in.Files.Context, got.Files.Context)
		})
	}
}

// requireAsRestoreAndFlush fails unless got holds the entries, and its log and
// context file the bytes (and mode), of what Restore and a Flush of session
// sid of store write.
func requireAsRestoreAndFlush(t *testing.T, store *transcript.Store, sid string, got sessiontree.RestoredSession) {
	t.Helper()
	ctx := context.Background()
	treeCfg := sessiontree.Config{Root: t.TempDir(), Store: store, NoSync: true}
	tree, _, err := sessiontree.Restore(ctx, treeCfg, who, "agent", sid)
	require.NoError(t, err)
	require.NoError(t, tree.Flush(ctx))
	require.Equal(t, tree.Len(), got.Entries)
	requireSameFile(t, tree.LogPath(), got.Files.Log)
	requireSameFile(t, tree.ContextPath(), got.Files.Context)
	st, err := os.Stat(got.Files.Log)
	require.NoError(t, err)
	require.Equal(t, st.Size(), got.Size)
}

// requireSameFile fails unless the files at want and got hold the same bytes
// and mode.
func requireSameFile(t *testing.T, want, got string) {
	t.Helper()
	w, err := os.ReadFile(want)
	require.NoError(t, err)
	g, err := os.ReadFile(got)
	require.NoError(t, err)
	require.Equal(t, string(w), string(g), got)
	ws, err := os.Stat(want)
	require.NoError(t, err)
	gs, err := os.Stat(got)
	require.NoError(t, err)
	require.Equal(t, ws.Mode(), gs.Mode(), got)
}

// TestWriteRestoredStored_Faults: a payload object missing or corrupt, or the
// context cancelled, fails the restore with the read's error and leaves no file
// behind (no context file that would refuse the next restore); the next
// restore, the payload back, succeeds. Goroutines are checked by TestMain.
func TestWriteRestoredStored_Faults(t *testing.T) {
	img := imageData(1, 400)
	segs := [][]string{{string(pi.NewHeader("s", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "/w", "").Raw())}}
	parent := ""
	for k := range 40 {
		id := fmt.Sprintf("a%d", k)
		segs = append(segs, []string{imageEntry(id, parent, imageData(k, 300)), imageEntry(id+"x", id, img)})
		parent = id
	}
	h := sha256.Sum256([]byte(imageData(20, 300)))
	key := who.Namespace + "/payloads/" + hex.EncodeToString(h[:]) + ".zst"
	tests := []struct {
		name    string
		breakIt func(t *testing.T, b bucket.Bucket)
		cancel  bool
		want    error
	}{
		{name: "missing", breakIt: func(t *testing.T, b bucket.Bucket) { require.NoError(t, b.Delete(context.Background(), key)) }, want: transcript.ErrPayloadMissing},
		{name: "corrupt", breakIt: func(t *testing.T, b bucket.Bucket) {
			enc, err := segment.NewEncoder()
			require.NoError(t, err)
			obj := enc.EncodePayload([]byte(imageData(21, 300)))
			require.NoError(t, b.Delete(context.Background(), key))
			require.NoError(t, b.Put(context.Background(), key, bytes.NewReader(obj), int64(len(obj)), bucket.PutOptions{}))
		}, want: segment.ErrCorrupt},
		{name: "cancelled", cancel: true, want: context.Canceled},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, store := storedStore(t)
			sid := fmt.Sprintf("faults-%d", i)
			ref := storedSession{segments: segs}.write(t, store, b, sid)
			res, err := store.ReadLeanStored(context.Background(), ref)
			require.NoError(t, err)
			rctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			} else {
				tc.breakIt(t, b)
			}
			cfg := sessiontree.Config{Root: t.TempDir(), NoSync: true}
			r, err := sessiontree.WriteRestoredStored(rctx, cfg, who, "agent", sid, res, store)
			require.ErrorIs(t, err, tc.want)
			files := sessiontree.FilesOf(cfg.Root, ref)
			_, serr := os.Stat(files.Context)
			require.ErrorIs(t, serr, os.ErrNotExist, "no context file")
			_, serr = os.Stat(files.Log)
			require.ErrorIs(t, serr, os.ErrNotExist, "no log")
			left, err := os.ReadDir(filepath.Dir(files.Log))
			require.NoError(t, err)
			require.Empty(t, left, "no temporary file")

			if !tc.cancel { // put the payload back: the next restore runs
				require.NoError(t, b.Delete(context.Background(), key))
				w, err := transcript.NewWriter("again")
				require.NoError(t, err)
				_, err = store.AppendSegment(context.Background(), ref, [][]byte{[]byte(imageEntry("a20", "a19", imageData(20, 300)))}, w)
				require.NoError(t, err)
			}
			res, err = store.ReadLeanStored(context.Background(), ref)
			require.NoError(t, err)
			r, err = sessiontree.WriteRestoredStored(context.Background(), cfg, who, "agent", sid, res, store)
			require.NoError(t, err)
			require.Equal(t, 80, r.Entries)
		})
	}
}
