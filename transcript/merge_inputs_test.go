package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestStore_ReadAll_InputsOnlyFromHigherLevels stores segments whose metadata names
// inputs that Compact would never name: a level-0 segment claiming a sibling, and
// two level-1 segments claiming each other. None of them may hide entries: an input
// is superseded only by a segment of a higher level.
func TestStore_ReadAll_InputsOnlyFromHigherLevels(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{})
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	name := func(level int, seq, hash uint64) string {
		return fmt.Sprintf("L%d/20260102T030405.%09dZ-w-%016x-%016x%s", level, seq, seq, hash, transcript.SegmentExt)
	}
	put := func(level int, seq uint64, inputs []string, raw []byte) string {
		data, m, err := enc.Encode(segment.Meta{WriterID: "w", Seq: seq, Level: uint8(level), Inputs: inputs}, [][]byte{raw})
		require.NoError(t, err)
		rel := name(level, seq, m.Checksum)
		require.NoError(t, b.Put(ctx, "default/a/s/"+rel, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
		return rel
	}
	first := put(0, 1, nil, entry("e1", ""))
	put(0, 2, []string{first}, entry("e2", "e1"))
	// Two compacted segments naming each other (their names are known in advance:
	// the hash in the name is the checksum of the one entry).
	_, m3, err := enc.Encode(segment.Meta{WriterID: "w", Seq: 3, Level: 1}, [][]byte{entry("e3", "e2")})
	require.NoError(t, err)
	_, m4, err := enc.Encode(segment.Meta{WriterID: "w", Seq: 4, Level: 1}, [][]byte{entry("e4", "e3")})
	require.NoError(t, err)
	n3, n4 := name(1, 3, m3.Checksum), name(1, 4, m4.Checksum)
	put(1, 3, []string{n4}, entry("e3", "e2"))
	put(1, 4, []string{n3}, entry("e4", "e3"))

	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"e1", "e2", "e3", "e4"}, ids(res))
}

// TestStore_ReadAll_Version1Compacted reads a compacted segment of format version
// 1, which records no origins, beside the level-0 segments written after it: its
// entries take its first input as origin key and their position in it, so they
// come before the later level-0 entries, and its conflict winner stays the winner.
func TestStore_ReadAll_Version1Compacted(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{})
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	put := func(level int, minute int, inputs []string, v uint16, raws ...[]byte) string {
		data, m, err := enc.Encode(segment.Meta{Version: v, WriterID: "w", Seq: uint64(minute), Level: uint8(level), Inputs: inputs}, raws)
		require.NoError(t, err)
		rel := fmt.Sprintf("L%d/20260102T03%02d00.000000000Z-w-%016x-%016x%s", level, minute, minute, m.Checksum, transcript.SegmentExt)
		require.NoError(t, b.Put(ctx, "default/a/s/"+rel, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
		return rel
	}
	dupOne := []byte(`{"id":"dup","parentId":"e1","v":1}`)
	dupTwo := []byte(`{"id":"dup","parentId":"e1","v":2}`)
	// The inputs themselves are gone (compacted and deleted); only their names remain.
	in1 := "L0/20260102T030100.000000000Z-w-0000000000000001-0000000000000001.jsonl.zst"
	in2 := "L0/20260102T030200.000000000Z-w-0000000000000002-0000000000000002.jsonl.zst"
	put(1, 10, []string{in2, in1}, segment.Version1, entry("e1", ""), dupOne, entry("e2", "e1"), dupTwo)
	put(0, 3, nil, segment.Version1, entry("e3", "e1"))
	put(0, 4, nil, 0, entry("e4", "e3"))

	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{"e1", "dup", "e2", "e3", "e4"}, ids(res))
	require.Equal(t, transcript.Origin{Key: in1, Pos: 2}, res.Entries[2].Origin)
	require.Equal(t, dupOne, res.Entries[1].Raw)
	require.Len(t, res.Conflicts, 1)
	require.Equal(t, dupTwo, res.Losers[0].Raw)
}
