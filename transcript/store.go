package transcript

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

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
	// namespace do not exist for it (reads, listings and deletes answer bucket.ErrNotFound or
	// nothing, appends are refused).
	Namespace string
	// ReadConcurrency bounds parallel segment fetches of one read. Zero adapts it
	// to the number of segments: DefaultReadConcurrency, and more for large
	// sessions (see MaxAdaptiveReadConcurrency).
	ReadConcurrency int
	// MaxRelists bounds how often ReadAll lists again after a listed segment vanished
	// (compaction removed it); default 5. A read pauses before each new listing,
	// 20 ms doubling with jitter (0.6 to 1.2 s over five), so that a compaction's
	// batch delete still in progress can finish first.
	MaxRelists int
	// Reconcile decides when ReadNew lists a whole session rather than only the
	// keys after those its reader holds (see ReadNew); the zero value takes the defaults.
	Reconcile ReconcilePolicy
	// SkipCorrupt makes ReadAll skip a segment that fails verification and report it
	// in MergeResult.Corrupt instead of failing.
	SkipCorrupt bool
	// Encoder and Decoder are the segment codecs; nil means defaults created (and
	// closed) by the store: level-0 segments are then compressed at
	// Level0EncoderLevel and compacted ones at zstd's default level. An Encoder
	// given here writes every segment.
	Encoder *segment.Encoder
	Decoder *segment.Decoder
	// Now returns the current time (default time.Now): the wall clock of the
	// default Clock and the time of deletion marks.
	Now func() time.Time
	// Clock gives the time of every segment key this store writes (default
	// NewClock(Now)); every listing of a session feeds it. Stores of one process
	// that read and write the same sessions share one.
	Clock *Clock
	// PayloadThreshold is the size in bytes from which a string of an entry that
	// pi.PayloadSpans names (base64 image data, the text of a tool result) is
	// stored once as a payload object of the namespace, outside the segment, which
	// keeps a reference in its place (see payload.go). Zero means
	// DefaultPayloadThreshold; a negative value keeps every payload in its
	// segment. Reads put payloads back whatever this is.
	PayloadThreshold int
	// SegmentCache, when set, keeps the segments this store's reads decode, so that
	// a later read of the same session (this store or another sharing the cache)
	// lists it and fetches only the segments it has not seen. Nil: none kept.
	SegmentCache *SegmentCache
}

// Level0EncoderLevel is the zstd level of the level-0 segments a store writes
// with its own encoder: the fastest. A level-0 segment is usually one turn of a
// few KiB, compressed on the writer's critical path and rewritten by the next
// compaction at the default level; at the default level each one costs about
// three times the CPU (its match tables are 1 MiB against 256 KiB, and a
// process flushing from several goroutines misses the cache on most lookups)
// for about 4% fewer bytes. BENCHMARKS.md gives the figures.
const Level0EncoderLevel = zstd.SpeedFastest

// Store reads and writes session segments. It is safe for concurrent use.
type Store struct {
	cfg Config
	enc *segment.Encoder
	// enc0 encodes level-0 segments: Config.Encoder when set, else an encoder
	// at zstd's fastest level (see Level0EncoderLevel).
	enc0     *segment.Encoder
	dec      *segment.Decoder
	ownCodec bool
	// adaptiveReads: Config.ReadConcurrency was left zero (see readLimit).
	adaptiveReads bool
	// keep, when set, is the filter of a View: the segments it rejects do not
	// exist for this Store value's reads.
	keep func(SegmentInfo) bool
	// gets, when set, holds the GET slots shared by every read through this Store
	// value (a copy made by ForEachListedSession): each fetch takes one, so the
	// reads of many sessions keep the pool full instead of each bounding itself.
	gets chan struct{}
	// stored, set by Stored, makes reads return entries as stored: payload
	// references stay in place and no payload object is fetched.
	stored bool
	// payloadFloor is the least delete delay of a payload object (payload_gc.go):
	// MinPayloadDeleteDelay; tests of the garbage collection lower it.
	payloadFloor time.Duration
	// resolveWindow bounds the payload bytes EachResolved fetches ahead:
	// DefaultResolveWindow when zero; tests lower it.
	resolveWindow int64
	// segmentTarget is the JSONL size at which a batch is cut into several
	// level-0 segments (SplitBatch): segment.DefaultTargetSegmentSize when zero;
	// tests lower it.
	segmentTarget int64
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
		cfg.MaxRelists = 5
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Clock == nil {
		cfg.Clock = NewClock(cfg.Now)
	}
	s := &Store{cfg: cfg, enc: cfg.Encoder, enc0: cfg.Encoder, dec: cfg.Decoder, adaptiveReads: adaptive, payloadFloor: MinPayloadDeleteDelay}
	var err error
	if s.enc == nil {
		if s.enc, err = segment.NewEncoder(); err != nil {
			return nil, fmt.Errorf("transcript: %w", err)
		}
		if s.enc0, err = segment.NewEncoder(segment.WithEncoderLevel(Level0EncoderLevel)); err != nil {
			return nil, errors.Join(fmt.Errorf("transcript: %w", err), s.enc.Close())
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
		errs = append(errs, s.enc.Close(), s.enc0.Close())
	}
	if s.cfg.Decoder == nil {
		errs = append(errs, s.dec.Close())
	}
	return errors.Join(errs...)
}

// Ping reports whether the bucket answers: one delimited listing of the store's
// prefix, stopped at its first object. It is a readiness probe; an error wraps
// what the bucket said (bucket.ErrUnavailable when it cannot be reached).
func (s *Store) Ping(ctx context.Context) error {
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: keyPrefix(s.cfg.Prefix), Delimited: true},
		func(bucket.ObjectInfo) error { return errStopListing })
	if err != nil && !errors.Is(err, errStopListing) {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// MaxEntrySize returns the largest entry the store keeps, in bytes of JSON
// without the newline (segment.DefaultMaxEntrySize): a larger one is refused
// with segment.ErrEntryTooLarge.
func (s *Store) MaxEntrySize() int { return segment.DefaultMaxEntrySize }

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

// View returns a store that reads only the segments keep accepts: to its
// listings of a session's segments and to every read (ReadAll, ReadLean,
// ReadNew, ReadSegment, ReadSegmentMeta) the others do not exist, so it
// union-merges exactly the kept segments by the store's rules, and a session
// none of whose segments is kept is not found. Package repository reads strict
// sessions through one (only the segments the head commits) and sessions as of a
// time (only segments created by then). A view of a view keeps what both keep.
// Writes, Compact and the listings of many sessions are not filtered: a view is
// for reading. It shares the store's bucket, codecs and clock; closing it is not
// needed.
func (s *Store) View(keep func(SegmentInfo) bool) *Store {
	c := *s
	c.ownCodec = false
	if prev := s.keep; prev != nil {
		c.keep = func(info SegmentInfo) bool { return prev(info) && keep(info) }
	} else {
		c.keep = keep
	}
	return &c
}

// hidden reports whether a View leaves info out.
func (s *Store) hidden(info SegmentInfo) bool { return s.keep != nil && !s.keep(info) }

// withoutHidden drops, in place, the segments of a listing that a View leaves
// out.
func (s *Store) withoutHidden(infos []SegmentInfo) []SegmentInfo {
	if s.keep == nil {
		return infos
	}
	return slices.DeleteFunc(infos, s.hidden)
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
	return fmt.Errorf("session %s: %w", ref, bucket.ErrNotFound)
}

// ListSegments lists the segments of ref, all levels, in key order. Keys under the
// session that are not segment keys are skipped. A session without segments gives an
// empty list, not an error.
func (s *Store) ListSegments(ctx context.Context, ref TranscriptRef) ([]SegmentInfo, error) {
	return s.listSegmentsAfter(ctx, ref, "")
}

// listSegmentsAfter lists the segments of ref whose keys sort after startAfter, so a
// reader can fetch only what is newer than what it has. A key carries the time its
// segment was created (by the writer's Clock), not the time it was stored: a segment
// that waited in a mirror's outbox through an outage, or came from a writer with a
// slow clock that had not read the session, lands with an older key, so a listing
// after a key never proves that nothing older is missing: an incremental reader
// uses ReadNew, which lists the whole session from time to time.
func (s *Store) listSegmentsAfter(ctx context.Context, ref TranscriptRef, startAfter string) ([]SegmentInfo, error) {
	return s.listSegmentsHead(ctx, ref, startAfter, nil)
}

// listSegmentsHead is listSegmentsAfter that, when head is not nil, sets *head to
// whether the listing showed the session's strict head object (HeadName).
func (s *Store) listSegmentsHead(ctx context.Context, ref TranscriptRef, startAfter string, head *bool) ([]SegmentInfo, error) {
	infos, _, err := s.listSegmentsUpTo(ctx, ref, startAfter, 0, head)
	return infos, err
}

// listSegmentsUpTo is listSegmentsHead that, when limit is positive, lists at
// most limit keys (segments or not): one short request on a bucket that lists
// in pages (bucket.ListOptions.FirstPage). more reports whether the listing
// stopped at the limit: keys may be left to list (stopping at the limit-th key,
// rather than at the one after it, sends no second request).
func (s *Store) listSegmentsUpTo(ctx context.Context, ref TranscriptRef, startAfter string, limit int, head *bool) ([]SegmentInfo, bool, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return nil, false, err
	}
	var out []SegmentInfo
	more := false
	sp := sessionPrefix(s.cfg.Prefix, ref)
	n := 0 // keys listed
	err = s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: sp, StartAfter: startAfter, FirstPage: limit},
		func(oi bucket.ObjectInfo) error {
			if info, err := ParseKey(s.cfg.Prefix, oi.Key); err == nil {
				info.Size = oi.Size
				out = append(out, info)
			} else if head != nil && oi.Key == sp+HeadName {
				*head = true
			} // else a mark or a stray file: not a segment
			if n++; limit > 0 && n == limit {
				more = true
				return errStopListing
			}
			return nil
		})
	if err != nil && !errors.Is(err, errStopListing) {
		return nil, false, fmt.Errorf("list segments of %s: %w", ref, err)
	}
	s.observe(ref, out)
	return s.withoutHidden(out), more, nil
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

// ReadSegment fetches, verifies and decodes the segment at key, with its payloads
// put back into its entries (unless s is Stored: see there).
func (s *Store) ReadSegment(ctx context.Context, key string) (*segment.Segment, error) {
	seg, info, err := s.readSegmentAsStored(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := s.resolveSegment(ctx, info.Ref.Norm().Namespace, seg); err != nil {
		return nil, fmt.Errorf("read segment %s: %w", key, err)
	}
	return seg, nil
}

// readSegmentAsStored is ReadSegment without putting payloads back.
func (s *Store) readSegmentAsStored(ctx context.Context, key string) (*segment.Segment, SegmentInfo, error) {
	info, err := ParseKey(s.cfg.Prefix, key)
	if err != nil {
		return nil, info, fmt.Errorf("read segment: %w", err)
	}
	if _, visible, err := s.checkRef(info.Ref); err != nil || !visible || s.hidden(info) {
		return nil, info, fmt.Errorf("read segment %s: %w", key, bucket.ErrNotFound)
	}
	seg, err := s.readListedSegment(ctx, key)
	return seg, info, err
}

// readListedSegment is ReadSegment of a key that a listing of this store already
// parsed and scoped (no second ParseKey: it validates the whole reference, rune by
// rune, which cost an open of 1,000 segments about 9% of its CPU).
func (s *Store) readListedSegment(ctx context.Context, key string) (*segment.Segment, error) {
	rc, oi, err := s.cfg.Bucket.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read segment %s: %w", key, err)
	}
	defer rc.Close()
	var seg *segment.Segment
	if oi.Size > 0 && oi.Size <= segment.DefaultMaxSegmentSize {
		// Frames are decompressed while the rest of the body arrives.
		seg, err = s.dec.DecodeFrom(rc, oi.Size)
	} else {
		// Of unknown size, or larger than any segment: Decode says which.
		var data []byte
		if data, err = io.ReadAll(rc); err == nil {
			seg, err = s.dec.Decode(data)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read segment %s: %w", key, err)
	}
	return seg, nil
}

// DecodeSegment verifies and decodes the bytes of one segment (read from anywhere: an
// outbox file, a copy) with the store's codec.
func (s *Store) DecodeSegment(data []byte) (*segment.Segment, error) {
	return s.dec.Decode(data)
}

// Delete removes every object of ref (segments of all levels and anything else under
// the session's prefix). Deleting a session that does not exist is not an error.
//
// Each round lists the prefix and deletes what it found in one ordered batch
// (bucket.DeleteInBatches): a strict session's head first, then the segments
// that may hold the session's header (the first key of each level: the
// session's first segment, and the compactions that merged it), then the rest.
// So a session in deletion reads as gone, never as damaged: without the head a
// strict session's appends find it gone (their head read or head write fails
// with bucket.ErrNotFound), and without the header what is left is no session
// (readers and SessionExists take segments without the header for leftovers).
// A delete that stops between the two (a crash part way through the batch on a
// backend without a batch request) leaves the session whole, read as a
// default-mode session, which a later Delete removes; never a head naming
// segments that are gone, which readers would report as damaged. It lists the
// prefix again after deleting what it listed, and deletes what landed
// meanwhile (segments of appends that were in flight), up to deleteRounds
// listings in all.
func (s *Store) Delete(ctx context.Context, ref TranscriptRef) error {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return err
	}
	for range deleteRounds {
		ls, err := s.sessionObjects(ctx, ref)
		if err != nil {
			return fmt.Errorf("delete %s: %w", ref, err)
		}
		keys := s.deleteOrder(ref, ls)
		if len(keys) == 0 {
			return nil
		}
		if err := s.deleteKeys(ctx, keys); err != nil {
			return fmt.Errorf("delete %s: %w", ref, err)
		}
	}
	return nil
}

// deleteOrder returns every key of ls in the order Delete removes them: the
// strict head, the first segment of each level (those that may hold the
// session's header), then the other segments, the marks, the cached summary,
// the retention mark and stray keys.
func (s *Store) deleteOrder(ref TranscriptRef, ls sessionListing) []string {
	var keys, rest []string
	if ls.strict {
		keys = append(keys, s.headKey(ref))
	}
	first := map[int]bool{}
	for _, in := range ls.infos { // in key order: each level's first key comes first
		if !first[in.Level] {
			first[in.Level] = true
			keys = append(keys, in.Key)
			continue
		}
		rest = append(rest, in.Key)
	}
	keys = append(keys, rest...)
	for _, m := range ls.marks {
		keys = append(keys, m.Key)
	}
	if ls.summary != "" {
		keys = append(keys, ls.summary)
	}
	if ls.retention != nil {
		keys = append(keys, ls.retention.Key)
	}
	return append(keys, ls.stray...)
}

// deleteRounds bounds the listings of one Delete: appends that keep coming
// could otherwise keep it going. What lands after the last is left to the
// readers' rule for segments without the session's header.
const deleteRounds = 3
