package segment

import "encoding/binary"

// FormatVersion is the newest metadata format version: decoders accept versions 1
// through FormatVersion and report ErrUnsupportedVersion for newer ones. Version 2
// adds each entry's origin and an optional per-entry index; version 3 adds
// references to payloads stored outside the segment (see FORMAT.md). Encode writes
// version 3 only for a segment that holds references, and version 2 otherwise, so
// that a reader of version 2 reads every segment without references.
const FormatVersion = 3

// Version2 is the version Encode writes for a segment without payload references.
const Version2 = 2

// Version1 is the first format version, without origins; Encode still writes it
// when Meta.Version asks for it, so that tests can build old segments.
const Version1 = 1

// DefaultMaxEntrySize is the largest entry (without its newline) the store
// holds, and the default limit of Encoder and Decoder (see limits.go).
const DefaultMaxEntrySize = 64 << 20 // 64 MiB

// DefaultMaxSegmentSize is the largest segment the store writes, and the default
// limit on the uncompressed size of a segment (its JSONL bytes; see limits.go). Decode rejects larger segments before it
// decompresses anything; Encode refuses to write them.
const DefaultMaxSegmentSize = 256 << 20 // 256 MiB

// Ext is the file-name extension of a segment object: the object is JSONL
// compressed with zstd.
const Ext = ".jsonl.zst"

// SkippableMagic is the zstd skippable-frame magic number (written little
// endian) of the metadata frame that starts every segment. The zstd format
// reserves 0x184D2A50 through 0x184D2A5F for skippable frames.
const SkippableMagic uint32 = 0x184D2A53

// MetaMagic is the 4-byte magic at the start of the metadata frame's
// payload, identifying it as transcript segment metadata.
const MetaMagic = "TSEG"

// MaxMetaSize is the largest metadata frame payload (the skippable frame's
// length field) that Encode writes and decoders accept.
const MaxMetaSize = 16 << 20 // 16 MiB

// MaxStringLen is the maximum length of each string in Meta (writer id,
// entry ids, input keys): strings carry a 2-byte length prefix.
const MaxStringLen = 1<<16 - 1

// Flags of the version 2 extension of the metadata frame (see FORMAT.md).
const (
	flagOrigins  = 1 << iota // a table of origin keys and one origin per entry
	flagIndex                // one index record (length, id, parentId) per entry
	flagGroup                // the segment is one part of a compaction's output group
	flagRefs                 // version 3: payload references follow
	flagResolved             // version 3: the checksum of the resolved JSONL follows
	knownFlags   = flagOrigins | flagIndex | flagGroup
	knownFlags3  = knownFlags | flagRefs | flagResolved
)

// Layout of the metadata frame, version 1 (see FORMAT.md).
const (
	frameHeaderSize = 8 // skippable magic + length, both uint32 LE

	// Offsets inside the frame payload (after frameHeaderSize).
	offMagic      = 0
	offVersion    = 4
	offLevel      = 6
	offReserved   = 7
	offSeq        = 8
	offEntryCount = 16
	offInputCount = 20
	offMinTime    = 24
	offMaxTime    = 32
	offRawLen     = 40
	offChecksum   = 48
	offPayloadLen = 56
	fixedSize     = 64 // the strings start here

	metaChecksumSize = 8
	// minMetaPayload: fixed fields, three empty strings, checksum.
	minMetaPayload = fixedSize + 3*2 + metaChecksumSize

	// maxRatio bounds how many bytes zstd data can decompress to per
	// compressed byte: a block of at most 128 KiB output takes at least
	// 4 bytes (3-byte header + 1 RLE byte).
	maxRatio = (128 << 10) / 4
)

// MetaSize returns the total size in bytes of the metadata frame that starts
// a segment, given at least the first 8 bytes of the object. A reader holding
// a prefix of a segment can use it to learn how many bytes ReadMeta needs.
// Errors match ErrTruncated (fewer than 8 bytes), ErrBadMagic or ErrCorrupt.
func MetaSize(header []byte) (int, error) {
	if len(header) < frameHeaderSize {
		return 0, corrupt(len(header), ErrTruncated, "metadata frame header needs %d bytes, have %d", frameHeaderSize, len(header))
	}
	if m := binary.LittleEndian.Uint32(header); m != SkippableMagic {
		if m == zstdFrameMagic {
			return 0, corrupt(0, ErrBadMagic, "plain zstd stream without segment metadata frame")
		}
		return 0, corrupt(0, ErrBadMagic, "frame magic %#08x, want %#08x", m, SkippableMagic)
	}
	n := binary.LittleEndian.Uint32(header[4:])
	if n > MaxMetaSize {
		return 0, corrupt(4, nil, "metadata frame length %d exceeds limit %d", n, MaxMetaSize)
	}
	if n < minMetaPayload {
		return 0, corrupt(4, nil, "metadata frame length %d below minimum %d", n, minMetaPayload)
	}
	return frameHeaderSize + int(n), nil
}

// zstdFrameMagic is the magic number of a regular zstd frame.
const zstdFrameMagic uint32 = 0xFD2FB528
