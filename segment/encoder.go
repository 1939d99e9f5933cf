package segment

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
)

// Encoder turns batches of entries into segments. It is safe for concurrent
// use; create one and share it. All calls share one *zstd.Encoder through
// its concurrency-safe EncodeAll.
type Encoder struct {
	opts encoderOptions
	zenc *zstd.Encoder
	raw  sync.Pool // *[]byte scratch for the uncompressed JSONL
}

// maxPooledRaw is the largest scratch buffer kept for reuse.
const maxPooledRaw = 4 << 20

// NewEncoder returns an Encoder configured by opts.
func NewEncoder(opts ...EncoderOption) (*Encoder, error) {
	o := encoderOptions{
		level:          zstd.SpeedDefault,
		maxEntrySize:   DefaultMaxEntrySize,
		maxSegmentSize: DefaultMaxSegmentSize,
		frameSize:      DefaultFrameSize,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	zenc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(o.level),
		zstd.WithEncoderCRC(true), // `zstd -dc` verifies the data too
		zstd.WithZeroFrames(true), // always a real zstd frame
		zstd.WithLowerEncoderMem(false),
	)
	if err != nil {
		return nil, fmt.Errorf("segment: new zstd encoder: %w", err)
	}
	return &Encoder{opts: o, zenc: zenc}, nil
}

// Encode encodes entries, in order, into one segment and returns its bytes
// and the completed metadata.
//
// meta supplies WriterID, Seq, Level, FirstID, LastID, MinTime, MaxTime,
// Inputs, Origins and Index (one of each per entry, or nil); Encode sets
// EntryCount, RawLen, Checksum and PayloadLen and ignores what the caller put
// there. It writes version 3 (FormatVersion) when meta holds payload references
// (Refs, each of which must stand in its entry as PayloadRef says), version 1 when
// meta.Version is Version1 (which has no Origins and no Index), and version 2
// otherwise. The returned Meta equals what
// Decode and ReadMeta return for the segment (times in UTC, no monotonic
// reading; empty Inputs as nil).
//
// Each entry is written byte for byte followed by '\n'. A batch larger than
// the frame size (WithFrameSize) is cut at entry boundaries into several zstd
// frames, compressed in parallel; a smaller one is a single frame.
//
// Encode rejects an empty batch, an empty entry or one containing '\n'
// (ErrInvalidEntry), an entry over the max entry size (ErrEntryTooLarge), a
// batch over the max segment size (ErrTooLarge) and metadata it cannot
// represent (ErrInvalidMeta). Encode does not retain entries.
func (e *Encoder) Encode(meta Meta, entries [][]byte) ([]byte, Meta, error) {
	if len(entries) == 0 {
		return nil, Meta{}, fmt.Errorf("encode segment: no entries: %w", ErrInvalidEntry)
	}
	if uint64(len(entries)) > 1<<32-1 {
		return nil, Meta{}, fmt.Errorf("encode segment: %d entries: %w", len(entries), ErrTooLarge)
	}
	var rawLen int64
	for i, ent := range entries {
		switch {
		case len(ent) == 0:
			return nil, Meta{}, fmt.Errorf("encode segment: entry %d is empty: %w", i, ErrInvalidEntry)
		case len(ent) > e.opts.maxEntrySize:
			return nil, Meta{}, fmt.Errorf("encode segment: entry %d is %d bytes, limit %d: %w", i, len(ent), e.opts.maxEntrySize, ErrEntryTooLarge)
		}
		if j := bytes.IndexByte(ent, '\n'); j >= 0 {
			return nil, Meta{}, fmt.Errorf("encode segment: entry %d contains a newline at byte %d: %w", i, j, ErrInvalidEntry)
		}
		rawLen += int64(len(ent)) + 1
		if rawLen > e.opts.maxSegmentSize {
			return nil, Meta{}, fmt.Errorf("encode segment: entries exceed %d bytes: %w", e.opts.maxSegmentSize, ErrTooLarge)
		}
	}

	m, minNS, maxNS, err := completeMeta(meta)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("encode segment: %w", err)
	}
	if err := checkPerEntry(&m, entries); err != nil {
		return nil, Meta{}, fmt.Errorf("encode segment: %w", err)
	}
	metaPayload, err := metaPayloadSize(&m)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("encode segment: %w", err)
	}
	frameSize := frameHeaderSize + metaPayload

	// Build the JSONL in pooled scratch space.
	bufp, _ := e.raw.Get().(*[]byte)
	if bufp == nil {
		bufp = new([]byte)
	}
	raw := (*bufp)[:0]
	if int64(cap(raw)) < rawLen {
		raw = make([]byte, 0, rawLen)
	}
	// ends holds the end offset in raw of every frame but the last, when the
	// batch is larger than one frame.
	var ends []int
	fs := e.opts.frameSize
	start := 0
	for _, ent := range entries {
		if rawLen > int64(fs) && len(raw) > start && len(raw)-start+len(ent)+1 > fs {
			ends = append(ends, len(raw))
			start = len(raw)
		}
		raw = append(raw, ent...)
		raw = append(raw, '\n')
	}

	m.EntryCount = uint32(len(entries))
	m.RawLen = uint64(len(raw))
	m.Checksum = xxhash.Sum64(raw)

	// Reserve room for the metadata frame, compress behind it, then fill
	// the frame in place: one allocation for the whole object.
	var out []byte
	if len(ends) == 0 {
		out = make([]byte, frameSize, frameSize+len(raw)/3+64)
		out = e.zenc.EncodeAll(raw, out)
	} else {
		out = e.encodeFrames(raw, append(ends, len(raw)), frameSize)
	}
	if cap(raw) <= maxPooledRaw {
		*bufp = raw[:0]
		e.raw.Put(bufp)
	}
	m.PayloadLen = uint64(len(out) - frameSize)
	putMeta(out[:frameSize], &m, minNS, maxNS)
	return out, m, nil
}

// encodeFrames compresses raw[ends[i-1]:ends[i]] (from 0 for i = 0) as one
// zstd frame each, in parallel on at most GOMAXPROCS goroutines, and returns
// head zero bytes followed by the frames in order.
func (e *Encoder) encodeFrames(raw []byte, ends []int, head int) []byte {
	frames := make([][]byte, len(ends))
	inParallel(len(ends), func(i int) bool {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		src := raw[start:ends[i]]
		frames[i] = e.zenc.EncodeAll(src, make([]byte, 0, len(src)/3+64))
		return true
	})

	total := head
	for _, f := range frames {
		total += len(f)
	}
	out := make([]byte, head, total)
	for _, f := range frames {
		out = append(out, f...)
	}
	return out
}

// completeMeta normalises the caller's metadata: version set, times in UTC
// without monotonic reading, empty Inputs as nil, derived fields cleared.
func completeMeta(meta Meta) (Meta, int64, int64, error) {
	minNS, err := encodeTime("min time", meta.MinTime)
	if err != nil {
		return Meta{}, 0, 0, err
	}
	maxNS, err := encodeTime("max time", meta.MaxTime)
	if err != nil {
		return Meta{}, 0, 0, err
	}
	if minNS != 0 && maxNS != 0 && minNS > maxNS {
		return Meta{}, 0, 0, fmt.Errorf("min time %v after max time %v: %w", meta.MinTime, meta.MaxTime, ErrInvalidMeta)
	}
	m := meta
	m.unpack() // a Meta read through PackedIndex is written as any other (needs its EntryCount)
	switch {
	case m.Version == Version1:
	case len(m.Refs) > 0 || m.HasResolvedChecksum:
		m.Version = FormatVersion
	default:
		m.Version = Version2
	}
	m.MinTime, m.MaxTime = decodeTime(minNS), decodeTime(maxNS)
	m.EntryCount, m.RawLen, m.Checksum, m.PayloadLen = 0, 0, 0, 0
	if len(m.Inputs) == 0 {
		m.Inputs = nil
	} else {
		m.Inputs = append([]string(nil), m.Inputs...)
	}
	if m.Origins != nil {
		m.Origins = append([]Origin{}, m.Origins...)
	}
	if m.Index != nil {
		m.Index = append([]IndexEntry{}, m.Index...)
	}
	if len(m.Refs) == 0 {
		m.Refs = nil
	} else {
		m.Refs = append([]PayloadRef(nil), m.Refs...)
	}
	if !m.HasResolvedChecksum {
		m.ResolvedChecksum = 0
	}
	return m, minNS, maxNS, nil
}

// checkPerEntry checks that Origins and Index, when given, hold one record per
// entry (and Index the entry's length), and that version 1 carries neither.
func checkPerEntry(m *Meta, entries [][]byte) error {
	if m.Version < 2 && (m.Origins != nil || m.Index != nil || !m.Group.IsZero()) {
		return fmt.Errorf("version %d has no origins, index or group: %w", m.Version, ErrInvalidMeta)
	}
	if m.Version < 3 && (m.Refs != nil || m.HasResolvedChecksum) {
		return fmt.Errorf("version %d has no payload references: %w", m.Version, ErrInvalidMeta)
	}
	if m.HasResolvedChecksum && m.Refs == nil {
		return fmt.Errorf("a resolved checksum without payload references: %w", ErrInvalidMeta)
	}
	if err := checkRefOrder(m.Refs, uint32(len(entries))); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMeta, err)
	}
	if err := checkRefsIn(m.Refs, entries); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidMeta, err)
	}
	if m.Origins != nil && len(m.Origins) != len(entries) {
		return fmt.Errorf("%d origins for %d entries: %w", len(m.Origins), len(entries), ErrInvalidMeta)
	}
	if m.Index == nil {
		return nil
	}
	if len(m.Index) != len(entries) {
		return fmt.Errorf("%d index records for %d entries: %w", len(m.Index), len(entries), ErrInvalidMeta)
	}
	for i, ie := range m.Index {
		if int(ie.Len) != len(entries[i]) {
			return fmt.Errorf("index record %d says %d bytes, entry has %d: %w", i, ie.Len, len(entries[i]), ErrInvalidMeta)
		}
	}
	return nil
}

// Close releases the zstd encoder. The Encoder must not be used afterwards.
func (e *Encoder) Close() error {
	return e.zenc.Close()
}
