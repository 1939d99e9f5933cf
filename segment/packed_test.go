package segment_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

// requireSamePacked checks that packed, the Meta of a segment decoded through
// a PackedIndex view, says what eager, the same segment's Meta from the plain
// Decoder, says: the same fields, no Origins or Index slices, and the same
// record from OriginAt and IndexAt for every entry.
func requireSamePacked(t testing.TB, eager, packed *segment.Meta) {
	t.Helper()
	if packed.Origins != nil || packed.Index != nil {
		t.Fatalf("packed meta holds %d origins and %d index records as slices", len(packed.Origins), len(packed.Index))
	}
	if eager.HasOrigins() != packed.HasOrigins() || eager.HasIndex() != packed.HasIndex() {
		t.Fatalf("origins %v/%v, index %v/%v (eager/packed)", eager.HasOrigins(), packed.HasOrigins(), eager.HasIndex(), packed.HasIndex())
	}
	if eager.HasOrigins() != (eager.Origins != nil) || eager.HasIndex() != (eager.Index != nil) {
		t.Fatalf("eager meta: HasOrigins %v with %d origins, HasIndex %v with %d records", eager.HasOrigins(), len(eager.Origins), eager.HasIndex(), len(eager.Index))
	}
	for i := range int(eager.EntryCount) {
		if eager.HasOrigins() && eager.Origins[i] != packed.OriginAt(i) {
			t.Fatalf("origin %d: %+v, packed %+v", i, eager.Origins[i], packed.OriginAt(i))
		}
		if eager.HasIndex() && eager.Index[i] != packed.IndexAt(i) {
			t.Fatalf("index record %d: %+v, packed %+v", i, eager.Index[i], packed.IndexAt(i))
		}
	}
	rest, prest := *eager, *packed
	rest.DropIndex()
	prest.DropIndex()
	if fmt.Sprintf("%+v", rest) != fmt.Sprintf("%+v", prest) {
		t.Fatalf("the other fields differ:\n%+v\n%+v", rest, prest)
	}
}

// indexedEntries returns n entries with an index record and an origin each:
// ids id00, id01, ... each the parent of the next, origins in this segment and
// in others, in runs of one key and not.
func indexedEntries(n int) ([][]byte, []segment.IndexEntry, []segment.Origin) {
	entries := makeEntries(n, 7)
	index := make([]segment.IndexEntry, n)
	origins := make([]segment.Origin, n)
	for i, e := range entries {
		index[i] = segment.IndexEntry{Len: uint32(len(e)), ID: fmt.Sprintf("id%02d", i)}
		if i > 0 {
			index[i].ParentID = index[i-1].ID
		}
		switch i % 3 {
		case 0:
			origins[i] = segment.Origin{Pos: uint32(i)} // this segment
		case 1:
			origins[i] = segment.Origin{Key: "L0/a.jsonl.zst", Pos: uint32(i / 3)}
		default:
			origins[i] = segment.Origin{Key: fmt.Sprintf("L0/b%d.jsonl.zst", i%5), Pos: 7}
		}
	}
	return entries, index, origins
}

// TestPackedIndex decodes segments with and without origins and an entry
// index through a PackedIndex view and the Decoder it comes from; the view's
// records equal the Decoder's, and a packed Meta written again makes the same
// segment.
func TestPackedIndex(t *testing.T) {
	entries, index, origins := indexedEntries(40)
	cases := []struct {
		name string
		meta segment.Meta
	}{
		{"version 1", segment.Meta{Version: segment.Version1}},
		{"neither", segment.Meta{}},
		{"origins", segment.Meta{Level: 1, Origins: origins}},
		{"index", segment.Meta{Index: index}},
		{"both", segment.Meta{Level: 1, Origins: origins, Index: index, Inputs: []string{"L0/a.jsonl.zst"}}},
	}
	enc, err := segment.NewEncoder(segment.WithFrameSize(4096))
	require.NoError(t, err)
	defer enc.Close()
	dec, err := segment.NewDecoder()
	require.NoError(t, err)
	defer dec.Close()
	packed := dec.PackedIndex()
	require.NoError(t, packed.Close(), "a view's Close closes nothing")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, _, err := enc.Encode(c.meta, entries)
			require.NoError(t, err)
			eager, err := dec.Decode(data)
			require.NoError(t, err)
			p, err := packed.Decode(data)
			require.NoError(t, err)
			require.Equal(t, c.meta.Origins != nil, p.Meta.HasOrigins())
			require.Equal(t, c.meta.Index != nil, p.Meta.HasIndex())
			requireSamePacked(t, &eager.Meta, &p.Meta)
			require.Equal(t, eager.Entries, p.Entries)
			for i := range entries {
				if c.meta.Origins != nil {
					require.Equal(t, origins[i], p.Meta.OriginAt(i))
				}
				if c.meta.Index != nil {
					require.Equal(t, index[i], p.Meta.IndexAt(i))
				}
			}
			again, _, err := enc.Encode(p.Meta, p.Entries)
			require.NoError(t, err)
			require.True(t, bytes.Equal(data, again), "a packed Meta encodes to the same segment")
			// The plain Decoder still decodes eagerly after the view was used.
			eager2, err := dec.Decode(data)
			require.NoError(t, err)
			require.Equal(t, eager.Meta, eager2.Meta)
		})
	}
}

// TestPackedIndex_Corrupt: a damaged index or origin record is reported by the
// view as the Decoder reports it.
func TestPackedIndex_Corrupt(t *testing.T) {
	entries, index, origins := indexedEntries(5)
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	data, _, err := enc.Encode(segment.Meta{Level: 1, Origins: origins, Index: index}, entries)
	require.NoError(t, err)
	dec, err := segment.NewDecoder()
	require.NoError(t, err)
	defer dec.Close()
	packed := dec.PackedIndex()
	n := metaLen(t, data)
	// Every byte of the metadata frame's body, flipped (the frame's checksum
	// then redone so that the field checks are reached).
	for at := offStrings; at < n-metaChecksumSz; at++ {
		bad := bytes.Clone(data)
		bad[at] ^= 0x5a
		reseal(bad)
		seg, err := dec.Decode(bad)
		pseg, perr := packed.Decode(bad)
		if (err == nil) != (perr == nil) || (err != nil && err.Error() != perr.Error()) {
			t.Fatalf("byte %d flipped: Decode %v, packed %v", at, err, perr)
		}
		if err == nil {
			requireSamePacked(t, &seg.Meta, &pseg.Meta)
		}
	}
}
