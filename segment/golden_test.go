package segment_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

// updateGolden regenerates testdata/*.jsonl.zst when set to 1.
const updateGoldenEnv = "SEGMENT_UPDATE_GOLDEN"

type goldenCase struct {
	name    string
	meta    segment.Meta
	entries [][]byte
	// frameSize, when set, is the encoder's frame size (WithFrameSize).
	frameSize int
}

func goldenCases() []goldenCase {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	small := makeEntries(3, 1)
	compacted := makeEntries(12, 2)
	// Version 2: a compacted segment records where each entry was first stored,
	// and an index of lengths, ids and parents.
	origins := make([]segment.Origin, len(compacted))
	index := make([]segment.IndexEntry, len(compacted))
	for i, e := range compacted {
		origins[i] = segment.Origin{Key: fmt.Sprintf("L0/20250601T120%d00.000000000Z-replica-%c-%016x-%016x.jsonl.zst", i%2, 'a'+i%2, 1, 0xabc+i%2), Pos: uint32(i / 2)}
		if i == 11 {
			origins[i] = segment.Origin{} // stored here first
		}
		var f struct{ ID, ParentID string }
		_ = json.Unmarshal(e, &f)
		index[i] = segment.IndexEntry{Len: uint32(len(e)), ID: fmt.Sprintf("c%02d", i+1), ParentID: f.ParentID}
	}
	compactedMeta := segment.Meta{
		WriterID: "compactor-0", Seq: 42, Level: 1,
		FirstID: "c01", LastID: "c12",
		MinTime: t0, MaxTime: t0.Add(time.Minute + 500*time.Millisecond),
		Inputs: []string{
			"L0/20250601T120000.000000000Z-replica-a-0000000000000001-0000000000000abc.jsonl.zst",
			"L0/20250601T120100.000000000Z-replica-b-0000000000000001-0000000000000abd.jsonl.zst",
		},
		Origins: origins,
		Index:   index,
	}
	// A part of a compaction output split into a group: the same inputs, a share
	// of the entries, and the group's id, part number and part count.
	part := compactedMeta
	part.Seq = 43
	part.Group = segment.Group{ID: "compactor-0-000000000000002b", Part: 1, Parts: 3}
	// A segment cut into several zstd frames at entry boundaries, as writers
	// cut every batch larger than their frame size.
	multi := makeEntries(12, 5)
	multiIndex := make([]segment.IndexEntry, len(multi))
	for i, e := range multi {
		multiIndex[i] = segment.IndexEntry{Len: uint32(len(e)), ID: fmt.Sprintf("m%02d", i+1)}
	}
	refEntries, refs := payloadEntries()
	return []goldenCase{
		// Version 3: entries holding payloads by reference (an image's data, a tool
		// output), listed in the metadata with their hashes and sizes.
		{
			name: "payload-v3",
			meta: segment.Meta{
				WriterID: "replica-a", Seq: 7, Level: 0,
				FirstID: "p1", LastID: "p3",
				MinTime: t0, MaxTime: t0.Add(2 * time.Second),
				Refs: refs, ResolvedChecksum: 0x0123456789abcdef, HasResolvedChecksum: true,
			},
			entries: refEntries,
		},
		{
			name: "small-v2",
			meta: segment.Meta{
				WriterID: "replica-a", Seq: 1, Level: 0,
				FirstID: "e1", LastID: "e3",
				MinTime: t0, MaxTime: t0.Add(3 * time.Second),
			},
			entries: small,
		},
		{name: "compacted-v2", meta: compactedMeta, entries: compacted},
		{name: "compacted-part-v2", meta: part, entries: compacted},
		{
			name: "multiframe-v2",
			meta: segment.Meta{
				WriterID: "compactor-0", Seq: 44, Level: 1,
				FirstID: "m01", LastID: "m12",
				MinTime: t0, MaxTime: t0.Add(18 * time.Second),
				Index: multiIndex,
			},
			entries:   multi,
			frameSize: 4096,
		},
		// Version 1 files, as older writers left them in buckets: still read, and
		// still written when asked for (Meta.Version = Version1).
		{
			name: "small",
			meta: segment.Meta{
				Version:  segment.Version1,
				WriterID: "replica-a", Seq: 1, Level: 0,
				FirstID: "e1", LastID: "e3",
				MinTime: t0, MaxTime: t0.Add(3 * time.Second),
			},
			entries: small,
		},
		{
			name: "compacted",
			meta: segment.Meta{
				Version:  segment.Version1,
				WriterID: "compactor-0", Seq: 42, Level: 1,
				FirstID: "c01", LastID: "c12",
				MinTime: t0, MaxTime: t0.Add(time.Minute + 500*time.Millisecond),
				Inputs: []string{
					"prod/tenant-1/agent-1/sess-1/L0/00000001748779200000-replica-a-0000000000000001-3f2a.jsonl.zst",
					"prod/tenant-1/agent-1/sess-1/L0/00000001748779260000-replica-b-0000000000000001-91cc.jsonl.zst",
				},
			},
			entries: compacted,
		},
	}
}

func goldenPath(name string) string { return filepath.Join("testdata", name+segment.Ext) }

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(goldenPath(name))
	require.NoError(t, err, "missing golden file; create it with %s=1 go test ./segment/ -run TestGolden", updateGoldenEnv)
	return data
}

// TestGolden freezes the format: the golden files must decode to the
// expected metadata and entries, and the encoder must reproduce them byte
// for byte.
func TestGolden(t *testing.T) {
	enc, dec := newCodec(t)
	for _, gc := range goldenCases() {
		t.Run(gc.name, func(t *testing.T) {
			enc := enc
			if gc.frameSize != 0 {
				var err error
				enc, err = segment.NewEncoder(segment.WithFrameSize(gc.frameSize))
				require.NoError(t, err)
				defer enc.Close()
			}
			got, meta, err := enc.Encode(gc.meta, gc.entries)
			require.NoError(t, err)
			if os.Getenv(updateGoldenEnv) == "1" {
				require.NoError(t, os.WriteFile(goldenPath(gc.name), got, 0o644))
				require.NoError(t, os.WriteFile(filepath.Join("testdata", gc.name+".jsonl"), joinJSONL(gc.entries), 0o644))
			}
			want := readGolden(t, gc.name)

			// Old files stay readable: this must hold even after a zstd
			// library upgrade changes the compressed bytes.
			seg, err := dec.Decode(want)
			require.NoError(t, err)
			require.Equal(t, gc.entries, seg.Entries)
			require.Equal(t, meta.EntryCount, seg.Meta.EntryCount)
			require.Equal(t, meta.Checksum, seg.Meta.Checksum)
			require.Equal(t, gc.meta.Inputs, seg.Meta.Inputs)
			require.Equal(t, gc.meta.Origins, seg.Meta.Origins)
			require.Equal(t, gc.meta.Index, seg.Meta.Index)
			require.Equal(t, gc.meta.Group, seg.Meta.Group)
			wantVersion := uint16(segment.Version2)
			switch {
			case gc.meta.Version == segment.Version1:
				wantVersion = segment.Version1
			case gc.meta.Refs != nil:
				wantVersion = segment.FormatVersion
			}
			require.Equal(t, gc.meta.Refs, seg.Meta.Refs)
			require.Equal(t, gc.meta.HasResolvedChecksum, seg.Meta.HasResolvedChecksum)
			require.Equal(t, gc.meta.ResolvedChecksum, seg.Meta.ResolvedChecksum)
			require.Equal(t, wantVersion, seg.Meta.Version)
			require.Equal(t, gc.meta.WriterID, seg.Meta.WriterID)
			require.True(t, gc.meta.MaxTime.Equal(seg.Meta.MaxTime))
			jsonl, err := os.ReadFile(filepath.Join("testdata", gc.name+".jsonl"))
			require.NoError(t, err)
			require.Equal(t, jsonl, joinJSONL(seg.Entries))

			require.True(t, bytes.Equal(want, got),
				"encoder output differs from %s (%d vs %d bytes).\n"+
					"If the format change is intended (or a zstd upgrade changed the compressed bytes and the old golden still decodes),\n"+
					"bump FormatVersion as FORMAT.md says and regenerate with: %s=1 go test ./segment/ -run TestGolden",
				goldenPath(gc.name), len(got), len(want), updateGoldenEnv)
		})
	}
}

// TestGolden_EveryPrefix decodes every strict prefix of each golden segment:
// each must fail cleanly with ErrTruncated, never panic, never succeed.
func TestGolden_EveryPrefix(t *testing.T) {
	_, dec := newCodec(t)
	for _, gc := range goldenCases() {
		t.Run(gc.name, func(t *testing.T) {
			data := readGolden(t, gc.name)
			n := metaLen(t, data)
			for k := range len(data) {
				prefix := data[:k]
				seg, err := dec.Decode(prefix)
				require.Nil(t, seg, "prefix %d", k)
				require.ErrorIs(t, err, segment.ErrTruncated, "prefix %d", k)
				var ce *segment.CorruptionError
				require.ErrorAs(t, err, &ce, "prefix %d", k)
				require.LessOrEqual(t, ce.Offset, int64(k))

				_, used, err := dec.ReadMeta(prefix)
				if k < n {
					require.ErrorIs(t, err, segment.ErrTruncated, "ReadMeta prefix %d", k)
				} else {
					require.NoError(t, err, "ReadMeta prefix %d", k)
					require.Equal(t, n, used)
				}
			}
			_, err := dec.Decode(data)
			require.NoError(t, err)
		})
	}
}

// TestEncode_PerEntryRecords checks the version 2 records Encode refuses.
func TestEncode_PerEntryRecords(t *testing.T) {
	enc, dec := newCodec(t)
	entries := [][]byte{[]byte(`{"id":"a"}`), []byte(`{"id":"b","parentId":"a"}`)}
	tests := []struct {
		name string
		meta segment.Meta
		ok   bool
	}{
		{"origins, one per entry", segment.Meta{Origins: []segment.Origin{{Key: "L0/x", Pos: 3}, {}}}, true},
		{"index, one per entry", segment.Meta{Index: []segment.IndexEntry{{Len: 10, ID: "a"}, {Len: 25, ID: "b", ParentID: "a"}}}, true},
		{"too few origins", segment.Meta{Origins: []segment.Origin{{}}}, false},
		{"index length wrong", segment.Meta{Index: []segment.IndexEntry{{Len: 9, ID: "a"}, {Len: 25, ID: "b"}}}, false},
		{"version 1 with origins", segment.Meta{Version: segment.Version1, Origins: []segment.Origin{{}, {}}}, false},
		{"group part", segment.Meta{Group: segment.Group{ID: "g", Part: 1, Parts: 2}}, true},
		{"group part out of range", segment.Meta{Group: segment.Group{ID: "g", Part: 2, Parts: 2}}, false},
		{"group without id", segment.Meta{Group: segment.Group{Part: 0, Parts: 2}}, false},
		{"version 1 with group", segment.Meta{Version: segment.Version1, Group: segment.Group{ID: "g", Parts: 1}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, meta, err := enc.Encode(tc.meta, entries)
			if !tc.ok {
				require.ErrorIs(t, err, segment.ErrInvalidMeta)
				return
			}
			require.NoError(t, err)
			seg, err := dec.Decode(data)
			require.NoError(t, err)
			require.Equal(t, meta, seg.Meta)
			require.Equal(t, tc.meta.Origins, seg.Meta.Origins)
			require.Equal(t, tc.meta.Index, seg.Meta.Index)
		})
	}
}

// payloadEntries returns three entries of which two hold payloads by reference
// (an image's data; the text of a tool result, twice the same payload), and the
// references.
func payloadEntries() ([][]byte, []segment.PayloadRef) {
	img := sha256.Sum256([]byte("iVBORw0KGgo (an image)"))
	out := sha256.Sum256([]byte("a long tool output"))
	entries := [][]byte{
		[]byte(`{"type":"message","id":"p1","parentId":null,"timestamp":"2025-06-01T12:00:00Z","message":{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"` + string(segment.RefText(img)) + `","mimeType":"image/png"}]}}`),
		[]byte(`{"type":"message","id":"p2","parentId":"p1","timestamp":"2025-06-01T12:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"a cat"}]}}`),
		[]byte(`{"type":"message","id":"p3","parentId":"p2","timestamp":"2025-06-01T12:00:02Z","message":{"role":"toolResult","toolCallId":"t","toolName":"bash","content":[{"type":"text","text":"` + string(segment.RefText(out)) + `"},{"type":"text","text":"` + string(segment.RefText(out)) + `"}],"isError":false}}`),
	}
	var refs []segment.PayloadRef
	for i, e := range entries {
		for _, h := range [][32]byte{img, out} {
			text := segment.RefText(h)
			for off := 0; ; {
				k := bytes.Index(e[off:], text)
				if k < 0 {
					break
				}
				refs = append(refs, segment.PayloadRef{Entry: uint32(i), Off: uint32(off + k), Size: 300 << 10, Hash: h})
				off += k + len(text)
			}
		}
	}
	return entries, refs
}
