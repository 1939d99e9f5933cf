package segment_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

// TestPayloadRefs_RoundTrip encodes a segment holding payload references and
// decodes it: version 3, the references and the resolved checksum as written, the
// entries as stored (references in place).
func TestPayloadRefs_RoundTrip(t *testing.T) {
	enc, dec := newCodec(t)
	entries, refs := payloadEntries()
	in := sampleMeta()
	in.Refs, in.ResolvedChecksum, in.HasResolvedChecksum = refs, 42, true
	data, meta, err := enc.Encode(in, entries)
	require.NoError(t, err)
	require.Equal(t, uint16(segment.FormatVersion), meta.Version)
	seg, err := dec.Decode(data)
	require.NoError(t, err)
	require.Equal(t, meta, seg.Meta)
	require.Equal(t, refs, seg.Meta.Refs)
	require.Equal(t, entries, seg.Entries)
	got, _, err := dec.ReadMeta(data)
	require.NoError(t, err)
	require.Equal(t, refs, got.Refs)
	require.True(t, got.HasResolvedChecksum)
	require.Equal(t, uint64(42), got.ResolvedChecksum)

	// Without a resolved checksum (a compaction copies references).
	in.HasResolvedChecksum, in.ResolvedChecksum = false, 0
	data, _, err = enc.Encode(in, entries)
	require.NoError(t, err)
	seg, err = dec.Decode(data)
	require.NoError(t, err)
	require.False(t, seg.Meta.HasResolvedChecksum)
}

// TestPayloadRefs_EncodeRefuses lists the references Encode refuses to record:
// each must stand, as RefText of its hash, between the quotes of a JSON string of
// the entry it names, in order.
func TestPayloadRefs_EncodeRefuses(t *testing.T) {
	entries, refs := payloadEntries()
	enc, _ := newCodec(t)
	mod := func(f func(r []segment.PayloadRef) []segment.PayloadRef) []segment.PayloadRef {
		return f(append([]segment.PayloadRef(nil), refs...))
	}
	for _, tc := range []struct {
		name string
		meta segment.Meta
	}{
		{"entry out of range", segment.Meta{Refs: mod(func(r []segment.PayloadRef) []segment.PayloadRef { r[2].Entry = 3; return r })}},
		{"offset off the reference", segment.Meta{Refs: mod(func(r []segment.PayloadRef) []segment.PayloadRef { r[0].Off++; return r })}},
		{"other hash", segment.Meta{Refs: mod(func(r []segment.PayloadRef) []segment.PayloadRef { r[0].Hash[0]++; return r })}},
		{"empty payload", segment.Meta{Refs: mod(func(r []segment.PayloadRef) []segment.PayloadRef { r[0].Size = 0; return r })}},
		{"out of order", segment.Meta{Refs: mod(func(r []segment.PayloadRef) []segment.PayloadRef { r[1], r[2] = r[2], r[1]; return r })}},
		{"twice", segment.Meta{Refs: mod(func(r []segment.PayloadRef) []segment.PayloadRef { return append(r, r[2]) })}},
		{"resolved checksum alone", segment.Meta{HasResolvedChecksum: true}},
		{"version 1", segment.Meta{Version: segment.Version1, Refs: refs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := enc.Encode(tc.meta, entries)
			require.ErrorIs(t, err, segment.ErrInvalidMeta)
		})
	}
	// Not between quotes: the reference's text alone, unquoted, is no reference.
	bare := sha256.Sum256([]byte("x"))
	e := []byte(`{"id":"a","x":1,"y":` + string(segment.RefText(bare)) + `}`)
	_, _, err := enc.Encode(segment.Meta{Refs: []segment.PayloadRef{{Off: uint32(bytes.Index(e, []byte(segment.RefPrefix))), Size: 9, Hash: bare}}},
		[][]byte{e})
	require.ErrorIs(t, err, segment.ErrInvalidMeta)
}

// TestPayloadRefs_DecodeChecks patches the references of a valid segment (and
// reseals its metadata): a reference that does not stand where the metadata says,
// or out of order, is corruption; an entry that would resolve beyond the entry
// limit is ErrEntryTooLarge.
func TestPayloadRefs_DecodeChecks(t *testing.T) {
	enc, dec := newCodec(t)
	entries, refs := payloadEntries()
	data, _, err := enc.Encode(segment.Meta{Refs: refs}, entries)
	require.NoError(t, err)
	n := metaLen(t, data)
	// The references end the extension, just before the meta checksum: the last
	// record's offset field is 44 bytes before its end.
	lastRef := n - metaChecksumSz - 48
	for _, tc := range []struct {
		name  string
		patch func(b []byte)
	}{
		{"offset moved", func(b []byte) {
			binary.LittleEndian.PutUint32(b[lastRef+4:], binary.LittleEndian.Uint32(b[lastRef+4:])+1)
		}},
		{"hash changed", func(b []byte) { b[lastRef+16] ^= 1 }},
		{"entry out of range", func(b []byte) { binary.LittleEndian.PutUint32(b[lastRef:], 9) }},
		{"size zero", func(b []byte) { binary.LittleEndian.PutUint64(b[lastRef+8:], 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(data)
			tc.patch(b)
			reseal(b)
			_, err := dec.Decode(b)
			require.ErrorIs(t, err, segment.ErrCorrupt)
		})
	}
	_, small := newCodec(t, segment.WithMaxEntrySize(200<<10))
	_, err = small.Decode(data)
	require.ErrorIs(t, err, segment.ErrEntryTooLarge, "each payload stands for 300 KiB")
}

// TestPayloadRefs_Helpers checks EntryRefs and ResolvedLen.
func TestPayloadRefs_Helpers(t *testing.T) {
	entries, refs := payloadEntries()
	require.Len(t, segment.EntryRefs(refs, 0), 1)
	require.Empty(t, segment.EntryRefs(refs, 1))
	require.Len(t, segment.EntryRefs(refs, 2), 2)
	require.Empty(t, segment.EntryRefs(refs, 7))
	require.Equal(t, uint64(len(entries[2])-2*segment.RefLen+2*300<<10), segment.ResolvedLen(len(entries[2]), segment.EntryRefs(refs, 2)))
	require.Equal(t, segment.RefLen, len(segment.RefText([32]byte{})))
}
