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

// ErrNotFound is returned (wrapped) for a session or segment that does not exist, or
// that lies outside the namespace a store is bound to.
var ErrNotFound = bucket.ErrNotFound

// ErrEmptySegment is returned by AppendSegment when given no entries.
var ErrEmptySegment = errors.New("segment has no entries")

// DefaultReadConcurrency is how many segments ReadAll fetches at once by default.
const DefaultReadConcurrency = 8

// Config configures a Store. The zero value of every field but Bucket is usable.
type Config struct {
	// Bucket holds the objects. Required.
	Bucket bucket.Bucket
	// Prefix is prepended (with "/") to every key; "" for none. Leading and trailing
	// slashes are ignored.
	Prefix string
	// Namespace, when set, binds the store to one namespace: refs in any other
	// namespace do not exist for it (reads, listings and deletes answer ErrNotFound or
	// nothing, appends are refused).
	Namespace string
	// ReadConcurrency bounds parallel segment fetches of one read. Zero adapts it
	// to the number of segments: DefaultReadConcurrency, and more for large
	// sessions (see MaxAdaptiveReadConcurrency).
	ReadConcurrency int
	// MaxRelists bounds how often ReadAll lists again after a listed segment vanished
	// (compaction removed it); default 3.
	MaxRelists int
	// SkipCorrupt makes ReadAll skip a segment that fails verification and report it
	// in MergeResult.Corrupt instead of failing.
	SkipCorrupt bool
	// Encoder and Decoder are the segment codecs; nil means defaults created (and
	// closed) by the store.
	Encoder *segment.Encoder
	Decoder *segment.Decoder
	// Now returns the current time (default time.Now): the wall clock of the
	// default Clock and the time of deletion marks.
	Now func() time.Time
	// Clock gives the time of every segment key this store writes (default
	// NewClock(Now)); every listing of a session feeds it. Stores of one process
	// that read and write the same sessions share one.
	Clock *Clock
}

// Store reads and writes session segments. It is safe for concurrent use.
type Store struct {
	cfg      Config
	enc      *segment.Encoder
	dec      *segment.Decoder
	ownCodec bool
	// adaptiveReads: Config.ReadConcurrency was left zero (see readLimit).
	adaptiveReads bool
}

// New returns a Store over cfg.Bucket.
func New(cfg Config) (*Store, error) {
	if cfg.Bucket == nil {
		return nil, errors.New("transcript: config has no bucket")
	}
	cfg.Prefix = strings.Trim(cfg.Prefix, "/")
	if err := bucket.ValidatePrefix(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("transcript: prefix: %w", err)
	}
	if cfg.Namespace != "" {
		if err := ValidatePart("namespace", cfg.Namespace); err != nil {
			return nil, err
		}
	}
	adaptive := cfg.ReadConcurrency <= 0
	if adaptive {
		cfg.ReadConcurrency = DefaultReadConcurrency
	}
	if cfg.MaxRelists <= 0 {
		cfg.MaxRelists = 3
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Clock == nil {
		cfg.Clock = NewClock(cfg.Now)
	}
	s := &Store{cfg: cfg, enc: cfg.Encoder, dec: cfg.Decoder, adaptiveReads: adaptive}
	var err error
	if s.enc == nil {
		if s.enc, err = segment.NewEncoder(); err != nil {
			return nil, fmt.Errorf("transcript: %w", err)
		}
		s.ownCodec = true
	}
	if s.dec == nil {
		if s.dec, err = segment.NewDecoder(); err != nil {
			return nil, fmt.Errorf("transcript: %w", err)
		}
		s.ownCodec = true
	}
	return s, nil
}

// Close releases the codecs the store created. The bucket is the caller's.
func (s *Store) Close() error {
	if !s.ownCodec {
		return nil
	}
	var errs []error
	if s.cfg.Encoder == nil {
		errs = append(errs, s.enc.Close())
	}
	if s.cfg.Decoder == nil {
		errs = append(errs, s.dec.Close())
	}
	return errors.Join(errs...)
}

// Bucket returns the bucket the store reads and writes.
func (s *Store) Bucket() bucket.Bucket { return s.cfg.Bucket }

// SessionPrefix returns the key prefix, ending in "/", of every object of ref:
// {prefix}/{namespace}/{agentId}/{sessionId}/. Objects other than segments (a
// strict session's HeadName) live under it too, so Delete removes them.
func (s *Store) SessionPrefix(ref TranscriptRef) string {
	return sessionPrefix(s.cfg.Prefix, ref.Norm())
}

// Clock returns the clock that times the store's segment keys.
func (s *Store) Clock() *Clock { return s.cfg.Clock }

// Prefix returns the key prefix of the store ("" for none).
func (s *Store) Prefix() string { return s.cfg.Prefix }

// WithNamespace returns a store bound to namespace ns (see Config.Namespace) sharing
// this store's bucket and codecs. Closing it is not needed.
func (s *Store) WithNamespace(ns string) (*Store, error) {
	if err := ValidatePart("namespace", ns); err != nil {
		return nil, err
	}
	if s.cfg.Namespace != "" && s.cfg.Namespace != ns {
		return nil, fmt.Errorf("%w: store is bound to namespace %q", ErrInvalidRef, s.cfg.Namespace)
	}
	c := *s
	c.cfg.Namespace = ns
	c.ownCodec = false
	return &c, nil
}

// checkRef validates and normalises ref. visible is false when the store is bound to
// another namespace.
func (s *Store) checkRef(ref TranscriptRef) (TranscriptRef, bool, error) {
	ref = ref.Norm()
	if err := ref.Validate(); err != nil {
		return ref, false, err
	}
	return ref, s.cfg.Namespace == "" || s.cfg.Namespace == ref.Namespace, nil
}

// errOutside is the error for a write to a session outside the namespace the store
// is bound to: "not found", as for every other operation on it, so that a tenant
// learns nothing about another one. Callers wrap ErrInvalidRef too, so that a
// retrying uploader (the mirror) gives up on it.
func errOutside(ref TranscriptRef) error {
	return fmt.Errorf("session %s: %w", ref, ErrNotFound)
}

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
	return s.prepare(ref, entries, w, 0, nil, nil)
}

// prepare encodes entries as a segment of the given level. A compacted segment
// (level above 0) names its inputs, records each entry's origin (one per entry)
// and carries an entry index.
func (s *Store) prepare(ref TranscriptRef, entries [][]byte, w *Writer, level int, inputs []string, origins []segment.Origin) (SegmentObject, error) {
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
	meta := segment.Meta{WriterID: w.ID(), Level: uint8(level), Inputs: inputs, Origins: origins}
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
		return fmt.Errorf("put segment %s: %w", key, err)
	}
	return nil
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

// ListSegments lists the segments of ref, all levels, in key order. Keys under the
// session that are not segment keys are skipped. A session without segments gives an
// empty list, not an error.
func (s *Store) ListSegments(ctx context.Context, ref TranscriptRef) ([]SegmentInfo, error) {
	return s.ListSegmentsAfter(ctx, ref, "")
}

// ListSegmentsAfter lists the segments of ref whose keys sort after startAfter, so a
// reader can fetch only what is newer than what it has. A key carries the time its
// segment was created (by the writer's Clock), not the time it was stored: a segment
// that waited in a mirror's outbox through an outage, or came from a writer with a
// slow clock that had not read the session, lands with an older key, so a listing
// after a key never proves that nothing older is missing: an incremental reader
// uses ReadNew, which lists the whole session.
func (s *Store) ListSegmentsAfter(ctx context.Context, ref TranscriptRef, startAfter string) ([]SegmentInfo, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return nil, err
	}
	var out []SegmentInfo
	err = s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: sessionPrefix(s.cfg.Prefix, ref), StartAfter: startAfter},
		func(oi bucket.ObjectInfo) error {
			info, err := ParseKey(s.cfg.Prefix, oi.Key)
			if err != nil {
				return nil // a mark, a head object or a stray file: not a segment
			}
			info.Size = oi.Size
			out = append(out, info)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("list segments of %s: %w", ref, err)
	}
	s.observe(ref, out)
	return out, nil
}

// observe feeds the clock with the key times of a session's listed segments.
func (s *Store) observe(ref TranscriptRef, infos []SegmentInfo) {
	var newest time.Time
	for _, in := range infos {
		if in.Time.After(newest) {
			newest = in.Time
		}
	}
	if !newest.IsZero() {
		s.cfg.Clock.Observe(ref, newest)
	}
}

// ReadSegment fetches, verifies and decodes the segment at key.
func (s *Store) ReadSegment(ctx context.Context, key string) (*segment.Segment, error) {
	info, err := ParseKey(s.cfg.Prefix, key)
	if err != nil {
		return nil, fmt.Errorf("read segment: %w", err)
	}
	if _, visible, err := s.checkRef(info.Ref); err != nil || !visible {
		return nil, fmt.Errorf("read segment %s: %w", key, ErrNotFound)
	}
	rc, oi, err := s.cfg.Bucket.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read segment %s: %w", key, err)
	}
	data, err := readAllSized(rc, oi.Size)
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("read segment %s: %w", key, err)
	}
	seg, err := s.dec.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("read segment %s: %w", key, err)
	}
	return seg, nil
}

// ListSessions lists the session ids of agent in namespace (empty: the default), in
// lexical order. A store bound to another namespace sees none.
func (s *Store) ListSessions(ctx context.Context, namespace, agent string) ([]string, error) {
	ref, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: agent, SessionID: "x"})
	if err != nil || !visible {
		return nil, err
	}
	return s.listChildren(ctx, keyPrefix(s.cfg.Prefix, ref.Namespace, ref.AgentID))
}

// ListAgents lists the agent ids that have sessions in namespace (empty: the default).
func (s *Store) ListAgents(ctx context.Context, namespace string) ([]string, error) {
	ref, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: "x", SessionID: "x"})
	if err != nil || !visible {
		return nil, err
	}
	return s.listChildren(ctx, keyPrefix(s.cfg.Prefix, ref.Namespace))
}

// ListNamespaces lists the namespaces that hold sessions; a bound store sees only its own.
func (s *Store) ListNamespaces(ctx context.Context) ([]string, error) {
	all, err := s.listChildren(ctx, keyPrefix(s.cfg.Prefix))
	if err != nil || s.cfg.Namespace == "" {
		return all, err
	}
	for _, ns := range all {
		if ns == s.cfg.Namespace {
			return []string{ns}, nil
		}
	}
	return nil, nil
}

func (s *Store) listChildren(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: prefix, Delimited: true}, func(oi bucket.ObjectInfo) error {
		if oi.IsPrefix {
			name := strings.TrimSuffix(strings.TrimPrefix(oi.Key, prefix), "/")
			if ValidatePart("name", name) == nil {
				out = append(out, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	return out, nil
}

// Delete removes every object of ref (segments of all levels and anything else under
// the session's prefix). Deleting a session that does not exist is not an error.
func (s *Store) Delete(ctx context.Context, ref TranscriptRef) error {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return err
	}
	var keys []string
	err = s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: sessionPrefix(s.cfg.Prefix, ref)}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", ref, err)
	}
	for _, k := range keys {
		if err := s.cfg.Bucket.Delete(ctx, k); err != nil {
			return fmt.Errorf("delete %s: %w", ref, err)
		}
	}
	return nil
}
