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
func (s *Store) PrepareSegment(ref TranscriptRef, entries [][]byte, w *Writer) (SegmentObject, error) {
	return s.prepare(ref, entries, w, 0, nil, nil, segment.Group{})
}

// prepare encodes entries as a segment of the given level. A compacted segment
// (level above 0) names its inputs, records each entry's origin (one per entry)
// and carries an entry index; one of a group of parts carries group.
func (s *Store) prepare(ref TranscriptRef, entries [][]byte, w *Writer, level int, inputs []string, origins []segment.Origin, group segment.Group) (SegmentObject, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return SegmentObject{}, err
	}
	if !visible {
		return SegmentObject{}, fmt.Errorf("%w: %w", errOutside(ref), ErrInvalidRef)
	}
	if w == nil {
		return SegmentObject{}, errors.New("prepare segment: nil writer")
	}
	if len(entries) == 0 {
		return SegmentObject{}, ErrEmptySegment
	}
	meta := segment.Meta{WriterID: w.ID(), Level: uint8(level), Inputs: inputs, Origins: origins, Group: group}
	if level > 0 {
		meta.Index = make([]segment.IndexEntry, len(entries))
	}
	for i, raw := range entries {
		if err := segment.CheckEntrySize(len(raw)); err != nil {
			return SegmentObject{}, fmt.Errorf("prepare segment: entry %d: %w", i, err)
		}
		e, err := ParseEntry(raw)
		if err != nil {
			return SegmentObject{}, fmt.Errorf("prepare segment: entry %d: %w", i, err)
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
	data, meta, err := s.enc.Encode(meta, entries)
	if err != nil {
		return SegmentObject{}, fmt.Errorf("prepare segment: %w", err)
	}
	now := s.cfg.Clock.Next(ref)
	info := SegmentInfo{
		Key: segmentKey(s.cfg.Prefix, ref, level, now, w.ID(), meta.Seq, meta.Checksum),
		Ref: ref, Level: level, Time: now.Truncate(time.Nanosecond), WriterID: w.ID(),
		Seq: meta.Seq, Hash: meta.Checksum, Size: int64(len(data)),
	}
	return SegmentObject{Info: info, Meta: meta, Data: data}, nil
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
	err = s.cfg.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{
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
	stored, err := io.ReadAll(io.LimitReader(rc, int64(len(data))+1))
	if err != nil {
		return fmt.Errorf("key exists, comparing its bytes failed: %w", err)
	}
	if bytes.Equal(stored, data) {
		return nil
	}
	return putErr
}

// AppendSegment writes entries as one new segment of ref and returns its description.
func (s *Store) AppendSegment(ctx context.Context, ref TranscriptRef, entries [][]byte, w *Writer) (SegmentInfo, error) {
	obj, err := s.PrepareSegment(ref, entries, w)
	if err != nil {
		return SegmentInfo{}, err
	}
	if err := s.PutSegment(ctx, obj.Info.Key, obj.Data); err != nil {
		return SegmentInfo{}, err
	}
	return obj.Info, nil
}
