package segment

// packedExt holds a segment's origins and entry index as its metadata stores
// them (FORMAT.md): fixed records for the origins, variable ones for the index,
// all within the one string that holds the metadata's extension. A decoded
// Meta keeps them so when its Decoder was made with PackedIndex: about 4 bytes
// an entry (the index records' offsets) instead of the 64 of an Origin and an
// IndexEntry, and no more than the ids themselves once a reader has taken what
// it needs.
type packedExt struct {
	s       string   // the extension (extReader.sbody); ids and keys are slices of it
	keys    []string // origin keys, origin key number k at keys[k-1]
	origins int      // offset in s of the first origin record; -1 when there are none
	index   []uint32 // offset in s of each entry's index record; nil when there is none
}

// origin returns the origin of entry i. The decoder checked every record.
func (p *packedExt) origin(i int) Origin {
	at := p.origins + 8*i
	o := Origin{Pos: strLE32(p.s[at+4:])}
	if k := strLE32(p.s[at:]); k > 0 {
		o.Key = p.keys[k-1]
	}
	return o
}

// indexEntry returns the index record of entry i. The decoder checked every record.
func (p *packedExt) indexEntry(i int) IndexEntry {
	at := int(p.index[i])
	ie := IndexEntry{Len: strLE32(p.s[at:])}
	at += 4
	l := int(strLE16(p.s[at:]))
	ie.ID = p.s[at+2 : at+2+l]
	at += 2 + l
	l = int(strLE16(p.s[at:]))
	ie.ParentID = p.s[at+2 : at+2+l]
	return ie
}

// strLE32 and strLE16 read little-endian integers from a string (binary.LittleEndian
// takes a []byte, and converting would copy).
func strLE32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func strLE16(s string) uint16 {
	_ = s[1]
	return uint16(s[0]) | uint16(s[1])<<8
}

// unpack turns the packed origins and index of m into Meta.Origins and
// Meta.Index.
func (m *Meta) unpack() {
	p := m.packed
	if p == nil {
		return
	}
	m.packed = nil
	n := int(m.EntryCount)
	if p.origins >= 0 {
		m.Origins = make([]Origin, n)
		for i := range m.Origins {
			m.Origins[i] = p.origin(i)
		}
	}
	if p.index != nil {
		m.Index = make([]IndexEntry, n)
		for i := range m.Index {
			m.Index[i] = p.indexEntry(i)
		}
	}
}

// HasOrigins reports whether the segment declares where each of its entries was
// first stored: Origins, or their packed form (Decoder.PackedIndex). Without
// them, every entry originates in the segment, at its own position.
func (m *Meta) HasOrigins() bool {
	return m.Origins != nil || (m.packed != nil && m.packed.origins >= 0)
}

// OriginAt returns the origin of entry i (Origins[i]) in either form. HasOrigins
// must be true and i below EntryCount.
func (m *Meta) OriginAt(i int) Origin {
	if m.Origins != nil {
		return m.Origins[i]
	}
	return m.packed.origin(i)
}

// HasIndex reports whether the segment carries an entry index: Index, or its
// packed form (Decoder.PackedIndex).
func (m *Meta) HasIndex() bool {
	return m.Index != nil || (m.packed != nil && m.packed.index != nil)
}

// IndexAt returns the index record of entry i (Index[i]) in either form.
// HasIndex must be true and i below EntryCount. Its strings share the
// metadata's memory.
func (m *Meta) IndexAt(i int) IndexEntry {
	if m.Index != nil {
		return m.Index[i]
	}
	return m.packed.indexEntry(i)
}

// DropIndex forgets the origins and the entry index, in either form: a reader
// that has taken what it needs from them frees their memory (the ids it kept
// still share the metadata's).
func (m *Meta) DropIndex() {
	m.Origins, m.Index, m.packed = nil, nil, nil
}
