package transcript

import (
	"context"
	"time"
)

// Copying references without looking at the payloads. A fork within one
// namespace copies references that a Stored read of the namespace's own segments
// returned. Those payloads exist unless the compaction job is deleting them, and
// the job deletes only what it has marked; so one listing of the namespace's
// payload marks, taken BEFORE the read, stands in for a look at each payload
// object (payload_copy.go's HEADs), and a fork costs the same requests whatever
// number of payloads it references: the listing of the marks, the read of the
// source's segments, and the fork's segment PUT.
//
// Why that is enough. Let t be the time the listing of the marks was sent (the
// local clock; only durations are compared, so the bucket's clock may differ),
// and P a payload that a segment S returned by the read references.
//
//   - P marked at t: the writer does not rely on it; the entries that reference
//     it are written inline, their payloads read from P's object (as
//     AppendStored does). A P gone by then fails the write; nothing is stored.
//   - P not marked at t, and deleted before t: the collector deleted it when no
//     segment it listed referenced P, so S was stored after that look, by a
//     writer that checked P before the mark was written, or copied from such a
//     segment. That writer looks again after its segment PUT and puts P back
//     (payload_write.go), which heals S and the fork alike; a writer that died
//     before doing so left S referencing a missing payload, and the fork is
//     exactly as damaged as its source, no more (verify reports both).
//   - P not marked at t, and not deleted before t: a deletion of P needs a mark
//     at least MinPayloadDeleteDelay old, written after t, so it comes after
//     t + MinPayloadDeleteDelay, after the collector listed the namespace's
//     segments again. The fork's segment is stored before t + payloadWindow
//     (half that delay), or the writer looks at each payload object after its
//     segment PUT and, finding one gone, deletes its segment and fails
//     (storeCopied). So the collector's second look lists the fork's segment,
//     sees its reference to P, and keeps P.
//
// The order matters: a listing taken after the read would miss a mark that was
// written, and a payload deleted, between the read and the listing (S deleted
// meanwhile, with its session). A reader that read S before the listing of the
// marks (an open session's handle, which knows the references of what it read:
// Entry.Resolved) may instead list the session after it: S still listed then
// was there all along (segments are immutable and their keys never reused), so
// every collector's look in between saw its references, as if S had been read
// after the listing. Into another namespace the payloads must be
// copied, so the check there is the full one (copyPayloads).

// PayloadCheck is one look at the deletion marks of a namespace's payloads,
// taken before a read of the namespace's segments as stored (CheckPayloads); a
// copy of the references that read returned relies on it (AppendChecked,
// CreateOptions.Check) in place of a look at each payload object. It is good
// for one copy: taken again for the next.
type PayloadCheck struct {
	ns     string
	at     time.Time // when the listing was sent
	marked map[PayloadHash]bool
}

// CheckPayloads lists the payload deletion marks of namespace (empty: the
// default), one LIST request, and returns them for a copy of references read
// from namespace after it (see AppendChecked). Take it right before the read.
func (s *Store) CheckPayloads(ctx context.Context, namespace string) (PayloadCheck, error) {
	ns, err := s.payloadNamespace(namespace)
	if err != nil {
		return PayloadCheck{}, err
	}
	at := time.Now()
	marked, err := s.payloadMarks(ctx, ns, nil)
	if err != nil {
		return PayloadCheck{}, err
	}
	return PayloadCheck{ns: ns, at: at, marked: marked}, nil
}

// AppendChecked is AppendStored of entries that a Stored read of namespace
// chk's segments returned after chk was taken (CheckPayloads): the references
// are copied as AppendStored copies them, but no payload object is looked at
// (see the top of payload_check.go), so the write costs one PUT per segment
// however many payloads the entries reference. Into another namespace than
// chk's it is AppendStored from chk's namespace.
func (s *Store) AppendChecked(ctx context.Context, ref TranscriptRef, chk PayloadCheck, entries []Entry, w *Writer) ([]SegmentInfo, error) {
	return s.appendStored(ctx, ref, chk.ns, &chk, entries, w)
}

// covers reports whether c may stand in for the looks at the payloads of a copy
// from namespace from into namespace ns.
func (c *PayloadCheck) covers(from, ns string) bool {
	return c != nil && !c.at.IsZero() && c.ns == from && from == ns
}

// of returns which payloads of sizes c found marked.
func (c *PayloadCheck) of(sizes map[PayloadHash]uint64) map[PayloadHash]bool {
	out := map[PayloadHash]bool{}
	for h := range sizes {
		if c.marked[h] {
			out[h] = true
		}
	}
	return out
}
