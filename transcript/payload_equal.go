package transcript

import (
	"bytes"
	"crypto/sha256"

	"github.com/transcriptstore/transcript/segment"
)

// SameEntry reports whether two stored versions of an entry, a with references
// ar and b with references br (segment.PayloadRef offsets in each; nil for an
// entry held whole), are the same entry as written, without fetching a payload:
// the bytes outside references must be equal, a reference must meet a reference
// to the same payload or bytes of the same SHA-256, at the same place of the
// entry as written. Two writers that took out different payloads (one kept them
// inline, say) thus store one entry, not a conflict. It trusts SHA-256 as the
// store does: equal hashes are equal payloads.
func SameEntry(a []byte, ar []segment.PayloadRef, b []byte, br []segment.PayloadRef) bool {
	if sameRefs(ar, br) {
		return bytes.Equal(a, b)
	}
	if segment.ResolvedLen(len(a), ar) != segment.ResolvedLen(len(b), br) {
		return false
	}
	pa, pb := pieces{raw: a, refs: ar}, pieces{raw: b, refs: br}
	for !pa.done() || !pb.done() {
		if pa.done() || pb.done() {
			return false
		}
		ra, aRef := pa.ref()
		rb, bRef := pb.ref()
		switch {
		case aRef && bRef:
			if ra.Hash != rb.Hash || ra.Size != rb.Size {
				return false
			}
			pa.skipRef()
			pb.skipRef()
		case aRef:
			if !pb.matches(ra) {
				return false
			}
			pa.skipRef()
		case bRef:
			if !pa.matches(rb) {
				return false
			}
			pb.skipRef()
		default:
			la, lb := pa.literal(), pb.literal()
			n := min(len(la), len(lb))
			if !bytes.Equal(la[:n], lb[:n]) {
				return false
			}
			pa.at += n
			pb.at += n
		}
	}
	return true
}

// SameShape reports whether raw, an entry as written, has the shape of stored, the
// entry as stored with references refs: the bytes outside the references are
// equal, and raw holds, in place of each reference, as many bytes as it names.
// It reads no payload and hashes none (SameEntry checks the hashes): a fork
// relies on it where the id has a single version in the store.
func SameShape(raw, stored []byte, refs []segment.PayloadRef) bool {
	if segment.ResolvedLen(len(stored), refs) != uint64(len(raw)) {
		return false
	}
	at, last := 0, 0
	for _, r := range refs {
		lit := stored[last:r.Off]
		if !bytes.Equal(raw[at:at+len(lit)], lit) {
			return false
		}
		at += len(lit) + int(r.Size)
		last = int(r.Off) + segment.RefLen
	}
	return bytes.Equal(raw[at:], stored[last:])
}

// StoredForm returns raw, an entry as written that a read returned with its
// payloads put back, as it was stored with the references refs (its
// Entry.Resolved: offsets in the stored form): each payload's bytes replaced by
// the text of its reference. It reads and hashes no payload; it only checks that
// refs fit raw (in order, within it), else it returns false. The bytes are new:
// raw is not modified.
func StoredForm(raw []byte, refs []segment.PayloadRef) ([]byte, bool) {
	var n uint64 // the payloads' bytes
	for _, r := range refs {
		if n += r.Size; r.Size > uint64(len(raw)) || n > uint64(len(raw)) {
			return nil, false
		}
	}
	out := make([]byte, 0, len(raw)-int(n)+len(refs)*segment.RefLen)
	at := 0 // in raw
	for _, r := range refs {
		// r.Off is where the reference stands in the stored form, which is out
		// so far, plus the literal bytes before it.
		lit := int(r.Off) - len(out)
		if lit < 0 || at+lit+int(r.Size) > len(raw) {
			return nil, false
		}
		out = append(out, raw[at:at+lit]...)
		out = segment.AppendRefText(out, r.Hash)
		at += lit + int(r.Size)
	}
	return append(out, raw[at:]...), true
}

// sameRefs reports whether two entries' references stand at the same offsets
// for the same payloads (their Entry fields may differ).
func sameRefs(a, b []segment.PayloadRef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Off != b[i].Off || a[i].Hash != b[i].Hash || a[i].Size != b[i].Size {
			return false
		}
	}
	return true
}

// pieces walks a stored entry as the entry as written: runs of literal bytes and
// payloads (its references).
type pieces struct {
	raw  []byte
	refs []segment.PayloadRef
	at   int // offset in raw
	k    int // next reference
}

func (p *pieces) done() bool { return p.at >= len(p.raw) }

// ref returns the reference that starts here, if one does.
func (p *pieces) ref() (segment.PayloadRef, bool) {
	if p.k < len(p.refs) && int(p.refs[p.k].Off) == p.at {
		return p.refs[p.k], true
	}
	return segment.PayloadRef{}, false
}

func (p *pieces) skipRef() {
	p.at += segment.RefLen
	p.k++
}

// literal returns the literal bytes from here to the next reference.
func (p *pieces) literal() []byte {
	end := len(p.raw)
	if p.k < len(p.refs) {
		end = int(p.refs[p.k].Off)
	}
	return p.raw[p.at:end]
}

// matches reports whether the literal bytes here are the payload r (its size and
// hash), and consumes them if so.
func (p *pieces) matches(r segment.PayloadRef) bool {
	lit := p.literal()
	if uint64(len(lit)) < r.Size || sha256.Sum256(lit[:r.Size]) != r.Hash {
		return false
	}
	p.at += int(r.Size)
	return true
}
