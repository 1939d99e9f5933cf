package segment

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Meta is a segment's metadata. It travels in the segment's leading zstd
// skippable frame (see FORMAT.md) and is protected by its own checksum.
type Meta struct {
	// Version is the metadata format version; set by Encode to FormatVersion.
	Version uint16
	// WriterID identifies the writer (replica) that produced the segment.
	WriterID string
	// Seq is the writer's sequence number for this segment.
	Seq uint64
	// Level is the compaction level: 0 for a flush, n+1 for a segment
	// compacted from level-n segments.
	Level uint8
	// EntryCount is the number of entries; set by Encode.
	EntryCount uint32
	// FirstID is the id of the first entry (filled by the caller).
	FirstID string
	// LastID is the id of the last entry (filled by the caller).
	LastID string
	// MinTime is the earliest entry timestamp (filled by the caller; the zero
	// Time means unknown). Stored as int64 Unix nanoseconds, decoded in UTC.
	MinTime time.Time
	// MaxTime is the latest entry timestamp, like MinTime.
	MaxTime time.Time
	// RawLen is the length of the uncompressed JSONL; set by Encode.
	RawLen uint64
	// Checksum is the xxhash64 of the uncompressed JSONL (every entry
	// followed by '\n'); set by Encode.
	Checksum uint64
	// PayloadLen is the length of the zstd data that follows the metadata
	// frame, so a segment object is exactly ReadMeta's n + PayloadLen bytes
	// long; set by Encode.
	PayloadLen uint64
	// Inputs name the input segments of a compacted segment. The transcript store
	// writes them relative to the session ("L0/{name}.jsonl.zst").
	Inputs []string
	// Origins (version 2) says where each entry was first stored: Origins[i] is
	// the origin of entry i. nil means every entry originates here, at its own
	// position (always so in version 1). Encode requires one per entry.
	Origins []Origin
	// Index (version 2, optional) describes each entry without parsing it:
	// Index[i] is entry i's length, id and parentId, as the writer declared them.
	// nil when the segment carries none. Encode requires one per entry, each
	// Len equal to the entry's length.
	Index []IndexEntry
	// Group (version 2, optional) says that the segment is one part of a group:
	// the output of one compaction, split into parts of bounded size. The zero
	// Group means the segment stands alone.
	Group Group
	// Refs (version 3) lists the payloads the entries hold by reference, in
	// order of entry and offset (see PayloadRef); nil when they hold none.
	Refs []PayloadRef
	// ResolvedChecksum (version 3, when HasResolvedChecksum) is the xxhash64 of
	// the JSONL with every reference replaced by its payload: the entries byte
	// for byte as their writer was handed them. A writer that extracted the
	// payloads itself knows it; one that copies references (a compaction, a
	// fork) does not.
	ResolvedChecksum    uint64
	HasResolvedChecksum bool

	// packed holds Origins and Index as stored, when the Decoder that read the
	// segment was made with PackedIndex (both fields are nil then).
	packed *packedExt
}

// Group identifies a compaction output split into several segments: every part
// carries the group's ID, its own Part number (0 .. Parts-1) and the number of
// Parts, and names the same inputs. The parts together hold the union of the
// inputs; one part alone holds only its share, so a reader or compactor trusts a
// group's claim over its inputs only when all Parts parts exist.
type Group struct {
	// ID names the group; unique per compaction.
	ID string
	// Part is this segment's position in the group, from 0.
	Part uint32
	// Parts is how many segments the group has; 0 means no group.
	Parts uint32
}

// IsZero reports whether g names no group.
func (g Group) IsZero() bool { return g == Group{} }

// checkGroup checks that g is either zero or a valid part of a group.
func checkGroup(g Group) error {
	switch {
	case g.IsZero():
		return nil
	case g.ID == "" || len(g.ID) > MaxStringLen:
		return fmt.Errorf("group id of %d bytes (1..%d): %w", len(g.ID), MaxStringLen, ErrInvalidMeta)
	case g.Parts == 0 || g.Part >= g.Parts:
		return fmt.Errorf("group part %d of %d: %w", g.Part, g.Parts, ErrInvalidMeta)
	}
	return nil
}

// Origin locates the first stored copy of an entry: the key of a level-0
// segment, relative to its session ("L0/{name}.jsonl.zst"), and the entry's
// position in it. An empty Key means the segment that holds the Origin.
type Origin struct {
	Key string
	Pos uint32
}

// IndexEntry is one record of a segment's entry index. The entry's offset in the
// uncompressed JSONL is the sum of Len+1 over the entries before it.
type IndexEntry struct {
	// Len is the entry's length in bytes (without its newline).
	Len uint32
	// ID and ParentID are the entry's "id" and "parentId" ("" for a root).
	ID, ParentID string
}

// originKeys returns the distinct non-empty origin keys of m in first-use order
// and each origin's key index (0 for this segment, k for keys[k-1]).
func originKeys(m *Meta) ([]string, []uint32) {
	if m.Origins == nil {
		return nil, nil
	}
	at := map[string]uint32{}
	var keys []string
	idx := make([]uint32, len(m.Origins))
	for i, o := range m.Origins {
		if o.Key == "" {
			continue
		}
		k, ok := at[o.Key]
		if !ok {
			keys = append(keys, o.Key)
			k = uint32(len(keys))
			at[o.Key] = k
		}
		idx[i] = k
	}
	return keys, idx
}

// extSize returns the size of the version 2 extension of m (flags and the
// sections they announce), checking the strings it holds.
func extSize(m *Meta, keys []string) (int, error) {
	size := 1
	if m.Origins != nil {
		size += 4 + 8*len(m.Origins)
		for _, k := range keys {
			if len(k) > MaxStringLen {
				return 0, fmt.Errorf("origin key is %d bytes, limit %d: %w", len(k), MaxStringLen, ErrInvalidMeta)
			}
			size += 2 + len(k)
		}
	}
	for i, ie := range m.Index {
		if len(ie.ID) > MaxStringLen || len(ie.ParentID) > MaxStringLen {
			return 0, fmt.Errorf("index entry %d: id over %d bytes: %w", i, MaxStringLen, ErrInvalidMeta)
		}
		size += 4 + 2 + len(ie.ID) + 2 + len(ie.ParentID)
		if size > MaxMetaSize {
			break
		}
	}
	if !m.Group.IsZero() {
		if err := checkGroup(m.Group); err != nil {
			return 0, err
		}
		size += 2 + len(m.Group.ID) + 4 + 4
	}
	if m.Refs != nil {
		size += 4 + refRecordSize*len(m.Refs)
	}
	if m.HasResolvedChecksum {
		size += 8
	}
	return size, nil
}

// metaPayloadSize returns the size of m's frame payload (without the 8-byte
// skippable-frame header), or an error if m cannot be represented.
func metaPayloadSize(m *Meta) (int, error) {
	size := minMetaPayload + len(m.WriterID) + len(m.FirstID) + len(m.LastID)
	for _, s := range []struct{ name, v string }{{"writer id", m.WriterID}, {"first id", m.FirstID}, {"last id", m.LastID}} {
		if len(s.v) > MaxStringLen {
			return 0, fmt.Errorf("%s is %d bytes, limit %d: %w", s.name, len(s.v), MaxStringLen, ErrInvalidMeta)
		}
	}
	if uint64(len(m.Inputs)) > math.MaxUint32 {
		return 0, fmt.Errorf("%d inputs: %w", len(m.Inputs), ErrInvalidMeta)
	}
	for i, in := range m.Inputs {
		if len(in) > MaxStringLen {
			return 0, fmt.Errorf("input %d is %d bytes, limit %d: %w", i, len(in), MaxStringLen, ErrInvalidMeta)
		}
		size += 2 + len(in)
		if size > MaxMetaSize {
			break
		}
	}
	if m.Version >= 2 {
		keys, _ := originKeys(m)
		n, err := extSize(m, keys)
		if err != nil {
			return 0, err
		}
		size += n
	}
	if size > MaxMetaSize {
		return 0, fmt.Errorf("metadata is over %d bytes: %w", MaxMetaSize, ErrInvalidMeta)
	}
	return size, nil
}

// encodeTime maps t to int64 Unix nanoseconds; the zero Time maps to 0. A time
// outside the int64 nanosecond span is clamped to its nearest end (ClampTime):
// entry times are never a reason to refuse a segment.
func encodeTime(_ string, t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	ns := ClampTime(t).UnixNano()
	if ns == 0 {
		ns = 1 // the epoch itself: 0 would read back as "unknown"
	}
	return ns, nil
}

func decodeTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// putMeta writes the complete metadata frame (header, payload, checksum) of
// m into frame, which must be exactly frameHeaderSize+payloadSize bytes.
func putMeta(frame []byte, m *Meta, minNS, maxNS int64) {
	le := binary.LittleEndian
	le.PutUint32(frame[0:], SkippableMagic)
	le.PutUint32(frame[4:], uint32(len(frame)-frameHeaderSize))
	p := frame[frameHeaderSize:]
	copy(p[offMagic:], MetaMagic)
	le.PutUint16(p[offVersion:], m.Version)
	p[offLevel] = m.Level
	p[offReserved] = 0
	le.PutUint64(p[offSeq:], m.Seq)
	le.PutUint32(p[offEntryCount:], m.EntryCount)
	le.PutUint32(p[offInputCount:], uint32(len(m.Inputs)))
	le.PutUint64(p[offMinTime:], uint64(minNS))
	le.PutUint64(p[offMaxTime:], uint64(maxNS))
	le.PutUint64(p[offRawLen:], m.RawLen)
	le.PutUint64(p[offChecksum:], m.Checksum)
	le.PutUint64(p[offPayloadLen:], m.PayloadLen)
	i := fixedSize
	put := func(s string) {
		le.PutUint16(p[i:], uint16(len(s)))
		i += 2 + copy(p[i+2:], s)
	}
	put(m.WriterID)
	put(m.FirstID)
	put(m.LastID)
	for _, in := range m.Inputs {
		put(in)
	}
	if m.Version >= 2 {
		var flags byte
		if m.Origins != nil {
			flags |= flagOrigins
		}
		if m.Index != nil {
			flags |= flagIndex
		}
		if !m.Group.IsZero() {
			flags |= flagGroup
		}
		if m.Refs != nil {
			flags |= flagRefs
		}
		if m.HasResolvedChecksum {
			flags |= flagResolved
		}
		p[i] = flags
		i++
		if m.Origins != nil {
			keys, idx := originKeys(m)
			le.PutUint32(p[i:], uint32(len(keys)))
			i += 4
			for _, k := range keys {
				put(k)
			}
			for n, o := range m.Origins {
				le.PutUint32(p[i:], idx[n])
				le.PutUint32(p[i+4:], o.Pos)
				i += 8
			}
		}
		for _, ie := range m.Index {
			le.PutUint32(p[i:], ie.Len)
			i += 4
			put(ie.ID)
			put(ie.ParentID)
		}
		if !m.Group.IsZero() {
			put(m.Group.ID)
			le.PutUint32(p[i:], m.Group.Part)
			le.PutUint32(p[i+4:], m.Group.Parts)
			i += 8
		}
		if m.Refs != nil {
			i = putRefs(p, i, m.Refs)
		}
		if m.HasResolvedChecksum {
			le.PutUint64(p[i:], m.ResolvedChecksum)
		}
	}
	sumAt := len(frame) - metaChecksumSize
	le.PutUint64(frame[sumAt:], xxhash.Sum64(frame[:sumAt]))
}

// checkMeta checks relations between fields that every valid segment obeys.
func checkMeta(m *Meta) error {
	switch {
	case m.EntryCount == 0:
		return corrupt(frameHeaderSize+offEntryCount, nil, "entry count is 0")
	case m.RawLen/2 < uint64(m.EntryCount):
		// Every entry takes at least one byte plus its newline.
		return corrupt(frameHeaderSize+offRawLen, nil, "raw length %d too small for %d entries", m.RawLen, m.EntryCount)
	case m.PayloadLen == 0 || m.PayloadLen > math.MaxInt64/maxRatio:
		return corrupt(frameHeaderSize+offPayloadLen, nil, "payload length %d out of range", m.PayloadLen)
	case m.RawLen > m.PayloadLen*maxRatio:
		return corrupt(frameHeaderSize+offRawLen, nil, "raw length %d impossible for %d compressed bytes", m.RawLen, m.PayloadLen)
	}
	return nil
}
