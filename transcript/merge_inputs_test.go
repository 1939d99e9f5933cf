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
