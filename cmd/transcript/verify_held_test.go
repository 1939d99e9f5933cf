package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

// TestCheckedPart: what verify keeps of a decoded segment until the session is
// checked has its entries, inputs, group and references, and neither the entry
// index nor the origins; the segment read is left as it was.
func TestCheckedPart(t *testing.T) {
	seg := &segment.Segment{
		Meta: segment.Meta{
			Level:   1,
			Inputs:  []string{"L0/a.jsonl.zst", "L0/b.jsonl.zst"},
			Index:   []segment.IndexEntry{{Len: 2, ID: "e1"}, {Len: 2, ID: "e2", ParentID: "e1"}},
			Origins: []segment.Origin{{Key: "L0/a.jsonl.zst", Pos: 0}, {Key: "L0/b.jsonl.zst", Pos: 0}},
			Group:   segment.Group{ID: "g-1", Part: 1, Parts: 3},
			Refs:    []segment.PayloadRef{{Entry: 1, Off: 1, Size: 10}},
		},
		Entries: [][]byte{[]byte("{}"), []byte("{}")},
	}
	before := *seg
	got := checkedPart(seg)
	require.Nil(t, got.Meta.Index)
	require.Nil(t, got.Meta.Origins)
	require.Equal(t, seg.Meta.Inputs, got.Meta.Inputs)
	require.Equal(t, seg.Meta.Group, got.Meta.Group)
	require.Equal(t, seg.Meta.Refs, got.Meta.Refs)
	require.Equal(t, seg.Meta.Level, got.Meta.Level)
	require.Equal(t, seg.Entries, got.Entries)
	require.Equal(t, before, *seg, "the segment read is not modified")
}

// TestCheckedPart_Packed: a segment verify read through a PackedIndex view
// (Store.PackedReads) keeps neither its packed index nor its origins either.
func TestCheckedPart_Packed(t *testing.T) {
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	dec, err := segment.NewDecoder()
	require.NoError(t, err)
	defer dec.Close()
	meta := segment.Meta{
		Level:   1,
		Inputs:  []string{"L0/a.jsonl.zst"},
		Index:   []segment.IndexEntry{{Len: 2, ID: "e1"}, {Len: 2, ID: "e2", ParentID: "e1"}},
		Origins: []segment.Origin{{Key: "L0/a.jsonl.zst", Pos: 0}, {Key: "L0/a.jsonl.zst", Pos: 1}},
	}
	data, _, err := enc.Encode(meta, [][]byte{[]byte("{}"), []byte("{}")})
	require.NoError(t, err)
	seg, err := dec.PackedIndex().Decode(data)
	require.NoError(t, err)
	require.True(t, seg.Meta.HasIndex() && seg.Meta.HasOrigins())
	got := checkedPart(seg)
	require.False(t, got.Meta.HasIndex(), "packed index kept")
	require.False(t, got.Meta.HasOrigins(), "packed origins kept")
	require.True(t, seg.Meta.HasIndex() && seg.Meta.HasOrigins(), "the segment read is not modified")
	require.Equal(t, meta.Inputs, got.Meta.Inputs)
	require.Equal(t, seg.Entries, got.Entries)
}
