package segment

// Decoding of the metadata frame (the layout is in FORMAT.md; putMeta in meta.go
// writes it).

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// parseMeta parses and verifies the metadata frame at the start of data and
// returns the metadata and the frame's total size. With packed set, the
// origins and entry index stay as stored (Decoder.PackedIndex).
//
// Order of checks (see FORMAT.md): frame magic, frame length, presence of
// the whole frame, metadata magic, metadata checksum, version, fields.
func parseMeta(data []byte, packed bool) (Meta, int, error) {
	var m Meta
	n, err := MetaSize(data)
	if err != nil {
		return m, 0, err
	}
	if len(data) < n {
		return m, 0, corrupt(len(data), ErrTruncated, "metadata frame needs %d bytes, have %d", n, len(data))
	}
	le := binary.LittleEndian
	frame := data[:n]
	p := frame[frameHeaderSize:]
	if string(p[offMagic:offMagic+len(MetaMagic)]) != MetaMagic {
		return m, 0, corrupt(frameHeaderSize+offMagic, ErrBadMagic, "metadata magic %q, want %q", p[offMagic:offMagic+len(MetaMagic)], MetaMagic)
	}
	sumAt := n - metaChecksumSize
	if got, want := xxhash.Sum64(frame[:sumAt]), le.Uint64(frame[sumAt:]); got != want {
		return m, 0, corrupt(sumAt, ErrChecksum, "metadata checksum %016x, stored %016x", got, want)
	}
	m.Version = le.Uint16(p[offVersion:])
	if m.Version == 0 {
		return m, 0, corrupt(frameHeaderSize+offVersion, nil, "metadata version 0")
	}
	if m.Version > FormatVersion {
		return m, 0, fmt.Errorf("segment version %d, this reader supports up to %d: %w", m.Version, FormatVersion, ErrUnsupportedVersion)
	}
	if p[offReserved] != 0 {
		return m, 0, corrupt(frameHeaderSize+offReserved, nil, "reserved byte is %#x, want 0", p[offReserved])
	}
	m.Level = p[offLevel]
	m.Seq = le.Uint64(p[offSeq:])
	m.EntryCount = le.Uint32(p[offEntryCount:])
	inputCount := le.Uint32(p[offInputCount:])
	m.MinTime = decodeTime(int64(le.Uint64(p[offMinTime:])))
	m.MaxTime = decodeTime(int64(le.Uint64(p[offMaxTime:])))
	m.RawLen = le.Uint64(p[offRawLen:])
	m.Checksum = le.Uint64(p[offChecksum:])
	m.PayloadLen = le.Uint64(p[offPayloadLen:])

	body := p[:len(p)-metaChecksumSize]
	i := fixedSize
	str := func(what string) (string, error) { return strAt(body, &i, what) }
	if m.WriterID, err = str("writer id"); err != nil {
		return Meta{}, 0, err
	}
	if m.FirstID, err = str("first id"); err != nil {
		return Meta{}, 0, err
	}
	if m.LastID, err = str("last id"); err != nil {
		return Meta{}, 0, err
	}
	// Each input takes at least 2 bytes: bound the count before allocating.
	if uint64(inputCount) > uint64(len(body)-i)/2 {
		return Meta{}, 0, corrupt(frameHeaderSize+offInputCount, nil, "input count %d overruns metadata", inputCount)
	}
	if inputCount > 0 {
		m.Inputs = make([]string, inputCount)
		for k := range m.Inputs {
			if m.Inputs[k], err = str("input key"); err != nil {
				return Meta{}, 0, err
			}
		}
	}
	if m.Version >= 2 {
		if i, err = parseExt(&m, body, i, packed); err != nil {
			return Meta{}, 0, err
		}
	}
	if i != len(body) {
		return Meta{}, 0, corrupt(frameHeaderSize+i, nil, "%d unexpected bytes after the last field", len(body)-i)
	}
	if err := checkMeta(&m); err != nil {
		return Meta{}, 0, err
	}
	return m, n, nil
}

// parseExt parses the version 2 (and 3) extension of the metadata at body[i:] into m and
// returns the offset after it. With packed set, the origins and the entry index
// are checked and left in place (m.packed) rather than read into slices.
func parseExt(m *Meta, body []byte, i int, packed bool) (int, error) {
	if len(body)-i < 1 {
		return 0, extCorrupt(i, "version 2 flags missing")
	}
	flags := body[i]
	known := byte(knownFlags)
	if m.Version >= 3 {
		known = knownFlags3
	}
	if flags&^known != 0 {
		return 0, extCorrupt(i, "unknown flags %#x", flags)
	}
	if flags&flagResolved != 0 && flags&flagRefs == 0 {
		return 0, extCorrupt(i, "resolved checksum without payload references")
	}
	i++
	// One string holds the extension; keys, ids and parents are slices of it, so
	// a segment of many entries costs one allocation, not one per string.
	r := &extReader{body: body, i: i, sbody: string(body[i:]), base: i}
	n := int(m.EntryCount)
	if packed && flags&(flagOrigins|flagIndex) != 0 {
		m.packed = &packedExt{s: r.sbody, origins: -1}
	}
	if flags&flagOrigins != 0 {
		if err := r.origins(m, n); err != nil {
			return 0, err
		}
	}
	if flags&flagIndex != 0 {
		if err := r.index(m, n); err != nil {
			return 0, err
		}
	}
	if flags&flagGroup != 0 {
		if err := r.group(m); err != nil {
			return 0, err
		}
	}
	if flags&flagRefs != 0 {
		if err := r.refs(m); err != nil {
			return 0, err
		}
	}
	if flags&flagResolved != 0 {
		if err := r.resolved(m); err != nil {
			return 0, err
		}
	}
	return r.i, nil
}

// extCorrupt reports damage at offset at of the metadata body.
func extCorrupt(at int, format string, args ...any) error {
	return corrupt(frameHeaderSize+at, nil, format, args...)
}

// extReader reads the version 2 extension of a metadata body, from offset i.
type extReader struct {
	body  []byte
	i     int
	sbody string // body[base:] as one string
	base  int
}

// str reads a length-prefixed string, a slice of sbody.
func (r *extReader) str(what string) (string, error) {
	body := r.body
	if len(body)-r.i < 2 {
		return "", extCorrupt(r.i, "%s length overruns metadata", what)
	}
	l := int(binary.LittleEndian.Uint16(body[r.i:]))
	r.i += 2
	if len(body)-r.i < l {
		return "", extCorrupt(r.i, "%s of %d bytes overruns metadata", what, l)
	}
	s := r.sbody[r.i-r.base : r.i-r.base+l]
	r.i += l
	return s, nil
}

// origins reads the origin keys and the origin of each of the n entries:
// into m.Origins, or, when m.packed is set, checked and left in place
// (packedExt.origin reads them).
func (r *extReader) origins(m *Meta, n int) error {
	le, body := binary.LittleEndian, r.body
	if len(body)-r.i < 4 {
		return extCorrupt(r.i, "origin key count overruns metadata")
	}
	count := le.Uint32(body[r.i:])
	r.i += 4
	if uint64(count) > uint64(len(body)-r.i)/2 {
		return extCorrupt(r.i-4, "origin key count %d overruns metadata", count)
	}
	keys := make([]string, count)
	for k := range keys {
		s, err := r.str("origin key")
		if err != nil {
			return err
		}
		keys[k] = s
	}
	if uint64(n)*8 > uint64(len(body)-r.i) {
		return extCorrupt(r.i, "%d origins overrun metadata", n)
	}
	p := m.packed
	if p != nil {
		p.keys, p.origins = keys, r.i-r.base
	} else {
		m.Origins = make([]Origin, n)
	}
	for k := range n {
		ki, pos := le.Uint32(body[r.i:]), le.Uint32(body[r.i+4:])
		if ki > count {
			return extCorrupt(r.i, "origin %d names key %d of %d", k, ki, count)
		}
		if p == nil {
			if ki > 0 {
				m.Origins[k].Key = keys[ki-1]
			}
			m.Origins[k].Pos = pos
		}
		r.i += 8
	}
	return nil
}

// index reads the entry index of the n entries, whose lengths must add up to
// the raw length: into m.Index, or, when m.packed is set, checked and noted
// where each record starts (packedExt.indexEntry reads them).
func (r *extReader) index(m *Meta, n int) error {
	body := r.body
	if uint64(n)*8 > uint64(len(body)-r.i) {
		return extCorrupt(r.i, "%d index records overrun metadata", n)
	}
	p := m.packed
	if p != nil {
		p.index = make([]uint32, n)
	} else {
		m.Index = make([]IndexEntry, n)
	}
	var total uint64
	for k := range n {
		if len(body)-r.i < 4 {
			return extCorrupt(r.i, "index record %d overruns metadata", k)
		}
		at := r.i
		l := binary.LittleEndian.Uint32(body[r.i:])
		total += uint64(l) + 1
		r.i += 4
		id, err := r.str("index id")
		if err != nil {
			return err
		}
		parent, err := r.str("index parent id")
		if err != nil {
			return err
		}
		if p != nil {
			p.index[k] = uint32(at - r.base)
		} else {
			m.Index[k] = IndexEntry{Len: l, ID: id, ParentID: parent}
		}
	}
	if total != m.RawLen {
		return extCorrupt(r.i, "index lengths add up to %d, raw length is %d", total, m.RawLen)
	}
	return nil
}

// group reads the group of a segment that is one part of a compaction's output.
func (r *extReader) group(m *Meta) error {
	id, err := r.str("group id")
	if err != nil {
		return err
	}
	if len(r.body)-r.i < 8 {
		return extCorrupt(r.i, "group part overruns metadata")
	}
	le := binary.LittleEndian
	m.Group = Group{ID: id, Part: le.Uint32(r.body[r.i:]), Parts: le.Uint32(r.body[r.i+4:])}
	r.i += 8
	if checkGroup(m.Group) != nil || m.Group.IsZero() {
		return extCorrupt(r.i-8, "group %q part %d of %d", id, m.Group.Part, m.Group.Parts)
	}
	return nil
}

// strAt reads a length-prefixed string at body[*i:] and advances *i.
func strAt(body []byte, i *int, what string) (string, error) {
	if len(body)-*i < 2 {
		return "", corrupt(frameHeaderSize+*i, nil, "%s length overruns metadata", what)
	}
	l := int(binary.LittleEndian.Uint16(body[*i:]))
	*i += 2
	if len(body)-*i < l {
		return "", corrupt(frameHeaderSize+*i, nil, "%s of %d bytes overruns metadata", what, l)
	}
	s := string(body[*i : *i+l])
	*i += l
	return s, nil
}
