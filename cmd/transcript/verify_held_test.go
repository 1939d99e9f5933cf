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
