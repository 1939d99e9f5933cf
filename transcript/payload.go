package transcript

import (
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/segment"
)

// Payload objects. A large JSON string of an entry (base64 image data, the text of
// a tool result: pi.PayloadSpans) is stored once per namespace, outside the
// segments, as the object
//
//	{prefix}/{namespace}/payloads/{sha256 hex}.zst
//
// (the payload's bytes as written, one zstd frame: `zstd -dc` prints them), and the
// segment keeps the entry with a reference in its place (segment format version 3,
// segment.PayloadRef). The key depends only on the bytes, so a payload shared by
// entries, sessions or forks is stored once and writing it again is harmless.
// Writers put payloads before the segment that references them
// (payload_write.go); reads put them back (payload_read.go), so every read that
// returns entries returns them byte for byte as written; compaction and forks copy
// references; the compaction job deletes the payloads no segment references
// (payload_gc.go).

// payloadDir is the element under a namespace's prefix that holds its payload
// objects, and their deletion marks under payloadDir/markDir.
const payloadDir = "payloads"

// payloadExt ends every payload object's key.
const payloadExt = ".zst"

// DefaultPayloadThreshold is the size from which a writer stores a payload outside
// its segment (Config.PayloadThreshold).
const DefaultPayloadThreshold = 256 << 10

// MinPayloadDeleteDelay is the least time a payload stays after it was marked for
// deletion, whatever delay the compaction job is given: longer than a writer
// takes from checking a payload's mark to storing the segment that references
// it (payloadWindow), so that the check made at deletion time sees that segment.
const MinPayloadDeleteDelay = 2 * time.Minute

// payloadWindow bounds how long a writer relies on its check that a payload is
// not marked for deletion: a segment stored later than that after the check is
// followed by a second look at its payloads, which puts back any that is gone.
const payloadWindow = MinPayloadDeleteDelay / 2

// ErrPayloadMissing is wrapped when an entry references a payload object that the
// bucket does not hold: a damaged store (verify reports it). It does not wrap
// bucket.ErrNotFound: the session exists.
var ErrPayloadMissing = errors.New("payload object missing")

// PayloadHash is the SHA-256 of a payload, the name of its object.
type PayloadHash = [segment.HashSize]byte

// PayloadRef is a reference to a payload in a stored entry: where it stands in
// the entry, the payload's size and hash (Entry.Refs; see segment.PayloadRef).
type PayloadRef = segment.PayloadRef

// payloadKey returns the key of the payload object of hash h in namespace ns.
func payloadKey(prefix, ns string, h PayloadHash) string {
	return keyPrefix(prefix, ns, payloadDir) + hex.EncodeToString(h[:]) + payloadExt
}

// payloadMarkKey returns the key of the deletion mark of the payload of hash h in
// namespace ns.
func payloadMarkKey(prefix, ns string, h PayloadHash) string {
	return keyPrefix(prefix, ns, payloadDir, markDir) + hex.EncodeToString(h[:]) + markExt
}

// parseHashName returns the hash that name ("{64 hex}" and ext) spells.
func parseHashName(name, ext string) (PayloadHash, bool) {
	var h PayloadHash
	hexits, ok := strings.CutSuffix(name, ext)
	if !ok || len(hexits) != 2*len(h) || strings.ToLower(hexits) != hexits {
		return h, false
	}
	_, err := hex.Decode(h[:], []byte(hexits))
	return h, err == nil
}

// KeyChecksum returns the checksum a segment's key names, given its metadata: the
// checksum of its entries as written. That is the resolved checksum of a segment
// whose writer took payloads out of the entries it was handed (the key does not
// depend on which it took out), and the checksum of the stored JSONL otherwise.
func KeyChecksum(m segment.Meta) uint64 {
	if m.HasResolvedChecksum {
		return m.ResolvedChecksum
	}
	return m.Checksum
}

// PayloadThreshold returns the size from which the store's writers keep a payload
// outside its segment (Config.PayloadThreshold with its default); 0 when they keep
// every payload inline. An entry shorter than that holds no payload this store
// took out.
func (s *Store) PayloadThreshold() int { return s.payloadThreshold() }

// payloadThreshold returns Config.PayloadThreshold with its default; 0 means
// payloads stay in their segments.
func (s *Store) payloadThreshold() int {
	switch t := s.cfg.PayloadThreshold; {
	case t == 0:
		return DefaultPayloadThreshold
	case t < 0:
		return 0
	default:
		return t
	}
}
