package segment

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

// FuzzPayloadRefs fuzzes the payload reference records of the metadata (the
// decoder's part that the meta checksum otherwise keeps mutations from reaching)
// and their check against the entries: never a panic; what is accepted is in
// order, inside the segment, writes back to the same bytes, and stands where it
// says in entries that checkRefsIn accepts.
func FuzzPayloadRefs(f *testing.F) {
	h := sha256.Sum256([]byte("payload"))
	entry := append(append([]byte(`{"id":"a","data":"`), RefText(h)...), `"}`...)
	refs := []PayloadRef{{Entry: 0, Off: uint32(len(`{"id":"a","data":"`)), Size: 7, Hash: h}}
	body := make([]byte, 4+refRecordSize)
	putRefs(body, 0, refs)
	f.Add(body, entry, uint8(1))
	f.Add(body[:10], entry, uint8(1))
	two := make([]byte, 4+2*refRecordSize)
	putRefs(two, 0, append(refs, refs...))
	f.Add(two, entry, uint8(2))
	f.Add([]byte{1, 0, 0, 0}, []byte(`{}`), uint8(0))
	f.Fuzz(func(t *testing.T, body, entry []byte, count uint8) {
		m := Meta{Version: FormatVersion, EntryCount: uint32(count)}
		r := &extReader{body: body}
		if err := r.refs(&m); err != nil {
			return
		}
		if len(m.Refs) == 0 {
			t.Fatal("accepted no references")
		}
		if err := checkRefOrder(m.Refs, m.EntryCount); err != nil {
			t.Fatalf("accepted refs out of order: %v", err)
		}
		back := make([]byte, r.i)
		if end := putRefs(back, 0, m.Refs); end != r.i || !bytes.Equal(back, body[:r.i]) {
			t.Fatal("references do not write back to their bytes")
		}
		entries := make([][]byte, m.EntryCount)
		for i := range entries {
			entries[i] = entry
		}
		if checkRefsIn(m.Refs, entries) != nil {
			return
		}
		for _, ref := range m.Refs {
			e := entries[ref.Entry]
			if e[ref.Off-1] != '"' || !bytes.Equal(e[ref.Off:int(ref.Off)+RefLen], RefText(ref.Hash)) || e[int(ref.Off)+RefLen] != '"' {
				t.Fatal("accepted a reference that is not in place")
			}
		}
		_ = ResolvedLen(len(entry), EntryRefs(m.Refs, 0))
	})
}
