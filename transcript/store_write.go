package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// SegmentObject is an encoded segment with its key, ready to be stored. Preparing it
// does no I/O; storing it (PutSegment) is idempotent.
type SegmentObject struct {
	Info SegmentInfo
	Meta segment.Meta
	Data []byte
}

// PrepareSegment validates and encodes entries as the next level-0 segment of ref
// written by w. Each entry must be one JSON object with a string id (see ParseEntry).
// The segment holds the entries as given: PutSegment takes out their payloads when
// it stores it (see payload.go), under the same key.
func (s *Store) PrepareSegment(ref TranscriptRef, entries [][]byte, w *Writer) (SegmentObject, error) {
	return s.prepareLevel0(ref, entries, nil, w)
}

// prepareLevel0 is PrepareSegment; links, when not nil, are the entries' links
// as their caller read them by the rule of ParseEntry (see AppendParsed), which
// the metadata is made of instead of a parse of each entry.
func (s *Store) prepareLevel0(ref TranscriptRef, entries [][]byte, links []pi.Links, w *Writer) (SegmentObject, error) {
	ref, meta, err := s.newMeta(ref, entries, links, w, 0)
	if err != nil {
		return SegmentObject{}, err
	}
	return s.encodeAs(ref, meta, entries, w)
}

// prepare encodes entries as a segment of the given level. A compacted segment
// (level above 0) names its inputs, records each entry's origin (one per entry)
// and carries an entry index; one of a group of parts carries group. refs, when
// not nil, holds the payload references of each entry (entries as stored, as a
// Stored read returns them and compaction copies them).
//
// The entries are compaction's: read back from segments that decoded and
// verified. Their links are read as readers read stored entries
// (parseStoredEntry: the top level scanned, the values not validated again),
// which was a fifth of a compaction's CPU; an entry a foreign writer stored
// with a malformed value is carried over byte for byte, as readers already
// return it, instead of failing the session's compaction on every run.
func (s *Store) prepare(ref TranscriptRef, entries [][]byte, w *Writer, level int, inputs []string, origins []segment.Origin, group segment.Group, refs [][]segment.PayloadRef) (SegmentObject, error) {
	links := make([]pi.Links, len(entries))
	for i, raw := range entries {
		l, err := pi.ScanLinks(raw)
		if err != nil {
			return SegmentObject{}, fmt.Errorf("prepare segment: entry %d: %w", i, err)
		}
		links[i] = l
	}
	ref, meta, err := s.newMeta(ref, entries, links, w, level)
	if err != nil {
		return SegmentObject{}, err
	}
	meta.Inputs, meta.Origins, meta.Group = inputs, origins, group
	meta.Refs = flattenRefs(refs)
	return s.encodeAs(ref, meta, entries, w)
}

// newMeta checks entries (each one JSON object with a string id, within the entry
// limit) and returns the metadata of a segment of them at level, written by w:
// ids, times, an entry index above level 0, and the writer's next sequence
// number. links, when not nil, are what the caller read of each entry by the
// rule of ParseEntry (or, for entries read back from verified segments, of
// parseStoredEntry): the entries are then taken as checked, not parsed again.
func (s *Store) newMeta(ref TranscriptRef, entries [][]byte, links []pi.Links, w *Writer, level int) (TranscriptRef, segment.Meta, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return ref, segment.Meta{}, err
	}
	if !visible {
		return ref, segment.Meta{}, fmt.Errorf("%w: %w", errOutside(ref), ErrInvalidRef)
	}
	if w == nil {
		return ref, segment.Meta{}, errors.New("prepare segment: nil writer")
	}
	if len(entries) == 0 {
		return ref, segment.Meta{}, ErrEmptySegment
	}
	if links != nil && len(links) != len(entries) {
		return ref, segment.Meta{}, fmt.Errorf("prepare segment: %d links for %d entries", len(links), len(entries))
	}
	meta := segment.Meta{WriterID: w.ID(), Level: uint8(level)}
	if level > 0 {
		meta.Index = make([]segment.IndexEntry, len(entries))
	}
	for i, raw := range entries {
		if err := segment.CheckEntrySize(len(raw)); err != nil {
			return ref, segment.Meta{}, fmt.Errorf("prepare segment: entry %d: %w", i, err)
		}
		var e Entry
		if links != nil {
			e = entryOf(raw, links[i])
		} else if e, err = ParseEntry(raw); err != nil {
			return ref, segment.Meta{}, fmt.Errorf("prepare segment: entry %d: %w", i, err)
		}
		if meta.Index != nil {
			meta.Index[i] = segment.IndexEntry{Len: uint32(len(raw)), ID: e.ID, ParentID: e.ParentID}
		}
		if i == 0 {
			meta.FirstID = e.ID
		}
		meta.LastID = e.ID
		if !e.Time.IsZero() {
			if meta.MinTime.IsZero() || e.Time.Before(meta.MinTime) {
				meta.MinTime = e.Time
			}
			if e.Time.After(meta.MaxTime) {
				meta.MaxTime = e.Time
			}
		}
	}
	meta.Seq = w.Next()
	return ref, meta, nil
}

// encodeAs encodes entries with meta (newMeta's) and names the segment: its key
// holds the next time of ref's clock, w's id, meta's sequence number and the
// checksum KeyChecksum gives.
func (s *Store) encodeAs(ref TranscriptRef, meta segment.Meta, entries [][]byte, w *Writer) (SegmentObject, error) {
	return s.encodeAt(ref, meta, entries, w, s.cfg.Clock.Next(ref))
}

// encodeAt is encodeAs with the key's time now drawn from the clock already
// (prepareExtracted draws it when the segment is prepared, so that a batch's
// segments are keyed in their order whenever each is encoded).
func (s *Store) encodeAt(ref TranscriptRef, meta segment.Meta, entries [][]byte, w *Writer, now time.Time) (SegmentObject, error) {
	data, meta, err := s.encoder(meta.Level).Encode(meta, entries)
	if err != nil {
		return SegmentObject{}, fmt.Errorf("prepare segment: %w", err)
	}
	sum := KeyChecksum(meta)
	level := int(meta.Level)
	info := SegmentInfo{
		Key: segmentKey(s.cfg.Prefix, ref, level, now, w.ID(), meta.Seq, sum),
		Ref: ref, Level: level, Time: now.Truncate(time.Nanosecond), WriterID: w.ID(),
		Seq: meta.Seq, Hash: sum, Size: int64(len(data)), Refs: meta.Refs,
	}
	return SegmentObject{Info: info, Meta: meta, Data: data}, nil
}

// encoder returns the encoder of segments of level: the level-0 encoder (at
// Level0EncoderLevel unless Config.Encoder was given) for level 0, the store's
// other encoder for compacted segments.
func (s *Store) encoder(level uint8) *segment.Encoder {
	if level == 0 {
		return s.enc0
	}
	return s.enc
}

// flattenRefs returns the references of each entry (refs[i] those of entry i) as
// one list in segment order, each naming its entry; nil when there are none.
func flattenRefs(refs [][]segment.PayloadRef) []segment.PayloadRef {
	var out []segment.PayloadRef
	for i, rs := range refs {
		for _, r := range rs {
			r.Entry = uint32(i)
			out = append(out, r)
		}
	}
	return out
}

// ObjectChecksum is the checksum PutSegment records with a segment object: the hex
// xxhash64 of its bytes. A retry that meets its own earlier attempt compares it.
func ObjectChecksum(data []byte) string {
	return fmt.Sprintf("%016x", xxhash.Sum64(data))
}

// PutSegment stores an encoded segment under key with a create-only write. Storing the
// same bytes under the same key again succeeds (a retry, or a re-upload after a crash);
// other bytes under an existing key give an error wrapping bucket.ErrExists.
//
// A level-0 segment of entries as written (PrepareSegment's) whose entries hold
// payloads of at least Config.PayloadThreshold bytes is stored with the payloads
// taken out: each is stored first as a payload object of the namespace, and the
// segment then keeps a reference in its place (payload.go); the key stays the one
// given, which names the entries as written (KeyChecksum).
//
// When the bucket reports the key taken and its checksum metadata does not settle
// the question (an object copied in by a tool that drops user metadata, say),
// PutSegment compares the stored bytes. If it cannot read them, the error is
// transient (it does not wrap bucket.ErrExists), so callers retry rather than give
// up on the word of a check that did not happen.
func (s *Store) PutSegment(ctx context.Context, key string, data []byte) error {
	info, err := ParseKey(s.cfg.Prefix, key)
	if err != nil {
		return fmt.Errorf("put segment: %w", err)
	}
	if _, visible, err := s.checkRef(info.Ref); err != nil {
		return fmt.Errorf("put segment %s: %w", key, err)
	} else if !visible {
		return fmt.Errorf("put segment %s: %w: %w", key, errOutside(info.Ref), ErrInvalidRef)
	}
	if info.Level == 0 && s.payloadThreshold() > 0 {
		if done, err := s.putExtracted(ctx, info, data); done || err != nil {
			return err
		}
	}
	return s.putObject(ctx, key, data)
}

// putObject stores the segment bytes data under key (PutSegment without taking
// payloads out).
func (s *Store) putObject(ctx context.Context, key string, data []byte) error {
	err := s.cfg.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{
		Checksum:    ObjectChecksum(data),
		ContentType: "application/zstd",
	})
	if errors.Is(err, bucket.ErrExists) {
		err = s.sameObject(ctx, key, data, err)
	}
	if err != nil {
		return wrapKey("put segment", key, err)
	}
	return nil
}

// wrapKey wraps err, from a bucket call about key (an object key or a listed
// prefix), as "op key: err", or as "op: err" when err names key already (the
// backends' errors do), so that a message holds every key once.
func wrapKey(op, key string, err error) error {
	if strings.Contains(err.Error(), key) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// sameObject decides a create-only conflict (putErr wraps bucket.ErrExists) by the
// stored bytes: nil if they equal data, putErr if they differ, and a transient error
// if they cannot be read.
func (s *Store) sameObject(ctx context.Context, key string, data []byte, putErr error) error {
	rc, _, err := s.cfg.Bucket.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("key exists, comparing its bytes failed: %w", err)
	}
	defer rc.Close()
	// Whole: another write of the same entries may have kept other payloads inline.
	stored, err := io.ReadAll(io.LimitReader(rc, max(int64(len(data))+1, maxStoredSegment)))
	if err != nil {
		return fmt.Errorf("key exists, comparing its bytes failed: %w", err)
	}
	if bytes.Equal(stored, data) || s.sameWritten(stored, data) {
		return nil
	}
	return putErr
}

// sameWritten reports whether the stored segment and data are one write stored
// twice with payloads taken out differently (a retry that met a payload marked for
// deletion keeps it inline): level 0, the same writer and sequence number, the
// same entries as written (KeyChecksum), one of them holding references, and the
// stored one whole (it decodes and verifies).
func (s *Store) sameWritten(stored, data []byte) bool {
	ma, _, errA := s.dec.ReadMeta(stored)
	mb, _, errB := s.dec.ReadMeta(data)
	if errA != nil || errB != nil || ma.Refs == nil && mb.Refs == nil || ma.Level != 0 || mb.Level != 0 ||
		ma.WriterID != mb.WriterID || ma.Seq != mb.Seq || ma.EntryCount != mb.EntryCount || KeyChecksum(ma) != KeyChecksum(mb) {
		return false
	}
	_, err := s.dec.Decode(stored)
	return err == nil
}

// AppendSegment writes entries as one new segment of ref and returns its
// description. Payloads of at least Config.PayloadThreshold bytes are stored first,
// as payload objects, and the segment keeps references to them (see PutSegment).
func (s *Store) AppendSegment(ctx context.Context, ref TranscriptRef, entries [][]byte, w *Writer) (SegmentInfo, error) {
	return s.appendLevel0(ctx, ref, entries, nil, w)
}

// ParsedEntry is an entry its caller has parsed by the rule ParseEntry applies
// (pi.ParseLinks; pi.ParseEntry applies it too), with the links it read.
type ParsedEntry struct {
	Raw   []byte
	Links pi.Links
}

// AppendParsed is AppendSegment for a caller that has already parsed each
// entry by the rule of ParseEntry (a repository validates every append): the
// store takes the entries' ids, parents and times from their Links instead of
// scanning and validating each entry a second time. It still checks each
// entry's size. The segment's metadata records what the links say, so a caller
// that did not read them from the entries by that rule must use AppendSegment.
// An entry holding a payload (Config.PayloadThreshold) is parsed in its stored
// form as AppendSegment parses it.
func (s *Store) AppendParsed(ctx context.Context, ref TranscriptRef, entries []ParsedEntry, w *Writer) (SegmentInfo, error) {
	raws := make([][]byte, len(entries))
	links := make([]pi.Links, len(entries))
	for i, e := range entries {
		raws[i], links[i] = e.Raw, e.Links
	}
	return s.appendLevel0(ctx, ref, raws, links, w)
}

// appendLevel0 is AppendSegment; links as in prepareLevel0.
func (s *Store) appendLevel0(ctx context.Context, ref TranscriptRef, entries [][]byte, links []pi.Links, w *Writer) (SegmentInfo, error) {
	if t := s.payloadThreshold(); t > 0 {
		if fs := findPayloads(entries, t); len(fs) > 0 {
			return s.appendExtracted(ctx, ref, entries, fs, w)
		}
	}
	obj, err := s.prepareLevel0(ref, entries, links, w)
	if err != nil {
		return SegmentInfo{}, err
	}
	if err := s.putObject(ctx, obj.Info.Key, obj.Data); err != nil {
		return SegmentInfo{}, err
	}
	return obj.Info, nil
}

// maxStoredSegment bounds what sameObject reads of a stored segment: more than
// any segment the store writes.
const maxStoredSegment = 2 * segment.DefaultMaxSegmentSize
