package segment

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Payload references (format version 3, see FORMAT.md). A writer may store a
// large JSON string of an entry (base64 image data, a long tool output) once,
// outside the segment, and keep in its place a reference: a JSON string whose
// contents are RefPrefix and the SHA-256 of the payload in hex. The metadata
// frame lists every reference (PayloadRef), so a reader never takes an entry's
// own text for one: only the bytes a PayloadRef names are a reference. Where the
// payloads are kept and how they are fetched is the transcript package's
// business; this package checks that every listed reference is in place.

// RefPrefix starts the text of every payload reference.
const RefPrefix = "transcript-payload:sha256:"

// RefLen is the length of a reference's text (between its quotes): RefPrefix and
// 64 hex digits.
const RefLen = len(RefPrefix) + 2*HashSize

// HashSize is the size of a payload's hash (SHA-256).
const HashSize = 32

// refRecordSize is the size of one PayloadRef in the metadata frame.
const refRecordSize = 4 + 4 + 8 + HashSize

// PayloadRef is one payload an entry of a segment holds by reference: the text of
// the reference (RefText of Hash) stands at byte Off of entry Entry, between the
// quotes of a JSON string, in place of Size bytes whose SHA-256 is Hash (the
// payload: the string's contents as written, escapes included).
type PayloadRef struct {
	// Entry is the index of the entry in the segment.
	Entry uint32
	// Off is the offset in the stored entry of the reference's first byte (after
	// the opening quote).
	Off uint32
	// Size is the payload's length in bytes.
	Size uint64
	// Hash is the SHA-256 of the payload.
	Hash [HashSize]byte
}

// RefText returns the text of a reference to the payload with SHA-256 hash: what
// stands between the quotes of the JSON string in the stored entry.
func RefText(hash [HashSize]byte) []byte {
	return AppendRefText(make([]byte, 0, RefLen), hash)
}

// AppendRefText appends RefText(hash) to dst.
func AppendRefText(dst []byte, hash [HashSize]byte) []byte {
	dst = append(dst, RefPrefix...)
	return hex.AppendEncode(dst, hash[:])
}

// checkRefOrder checks what the metadata alone says of refs: each names an entry
// of the segment, a payload of at least one byte, an offset after an opening
// quote, and they come in order of entry and offset without overlapping.
func checkRefOrder(refs []PayloadRef, entryCount uint32) error {
	for i, r := range refs {
		switch {
		case r.Entry >= entryCount:
			return fmt.Errorf("reference %d names entry %d of %d", i, r.Entry, entryCount)
		case r.Size == 0:
			return fmt.Errorf("reference %d stands for an empty payload", i)
		case r.Off == 0:
			return fmt.Errorf("reference %d starts at offset 0", i)
		case uint64(r.Off)+uint64(RefLen) >= 1<<32:
			return fmt.Errorf("reference %d at offset %d overruns any entry", i, r.Off)
		}
		if i == 0 {
			continue
		}
		p := refs[i-1]
		if r.Entry < p.Entry || r.Entry == p.Entry && uint64(r.Off) <= uint64(p.Off)+uint64(RefLen) {
			return fmt.Errorf("reference %d (entry %d, offset %d) out of order or overlapping reference %d", i, r.Entry, r.Off, i-1)
		}
	}
	return nil
}

// checkRefsIn checks that every reference stands where refs say: between the
// quotes of a JSON string of its entry, spelled as RefText of its hash.
func checkRefsIn(refs []PayloadRef, entries [][]byte) error {
	var want [RefLen]byte
	for i, r := range refs {
		e := entries[r.Entry]
		end := int(r.Off) + RefLen
		if end >= len(e) {
			return fmt.Errorf("reference %d at offset %d overruns entry %d of %d bytes", i, r.Off, r.Entry, len(e))
		}
		AppendRefText(want[:0], r.Hash)
		if e[r.Off-1] != '"' || e[end] != '"' || !bytes.Equal(e[r.Off:end], want[:]) {
			return fmt.Errorf("reference %d: entry %d does not hold the reference at offset %d", i, r.Entry, r.Off)
		}
	}
	return nil
}

// ResolvedLen returns the length of an entry of storedLen bytes once its
// references refs are replaced by their payloads.
func ResolvedLen(storedLen int, refs []PayloadRef) uint64 {
	n := uint64(storedLen)
	for _, r := range refs {
		n -= uint64(RefLen) // the reference is in the entry, so n >= RefLen
		n += r.Size
	}
	return n
}

// EntryRefs returns the references of entry i among refs (sorted by entry, as a
// Meta holds them), a subslice of refs.
func EntryRefs(refs []PayloadRef, i uint32) []PayloadRef {
	lo, hi := 0, len(refs)
	for lo < hi { // first reference of an entry >= i
		m := int(uint(lo+hi) >> 1)
		if refs[m].Entry < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	end := lo
	for end < len(refs) && refs[end].Entry == i {
		end++
	}
	return refs[lo:end:end]
}

// putRefs writes the payload references section at p[i:] and returns the offset
// after it.
func putRefs(p []byte, i int, refs []PayloadRef) int {
	le := binary.LittleEndian
	le.PutUint32(p[i:], uint32(len(refs)))
	i += 4
	for _, r := range refs {
		le.PutUint32(p[i:], r.Entry)
		le.PutUint32(p[i+4:], r.Off)
		le.PutUint64(p[i+8:], r.Size)
		copy(p[i+16:], r.Hash[:])
		i += refRecordSize
	}
	return i
}

// refs reads the payload references of the extension (version 3).
func (r *extReader) refs(m *Meta) error {
	body := r.body
	if len(body)-r.i < 4 {
		return extCorrupt(r.i, "reference count overruns metadata")
	}
	le := binary.LittleEndian
	count := le.Uint32(body[r.i:])
	r.i += 4
	if count == 0 || uint64(count)*refRecordSize > uint64(len(body)-r.i) {
		return extCorrupt(r.i-4, "reference count %d out of range", count)
	}
	m.Refs = make([]PayloadRef, count)
	for k := range m.Refs {
		ref := &m.Refs[k]
		ref.Entry, ref.Off, ref.Size = le.Uint32(body[r.i:]), le.Uint32(body[r.i+4:]), le.Uint64(body[r.i+8:])
		copy(ref.Hash[:], body[r.i+16:r.i+refRecordSize])
		r.i += refRecordSize
	}
	if err := checkRefOrder(m.Refs, m.EntryCount); err != nil {
		return extCorrupt(r.i, "%v", err)
	}
	return nil
}

// resolved reads the checksum of the resolved JSONL (version 3).
func (r *extReader) resolved(m *Meta) error {
	if len(r.body)-r.i < 8 {
		return extCorrupt(r.i, "resolved checksum overruns metadata")
	}
	m.ResolvedChecksum, m.HasResolvedChecksum = binary.LittleEndian.Uint64(r.body[r.i:]), true
	r.i += 8
	return nil
}
