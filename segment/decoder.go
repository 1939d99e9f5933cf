package segment

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/trace"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
)

// Segment is a decoded, verified segment.
type Segment struct {
	// Meta is the segment's metadata.
	Meta Meta
	// Entries are the raw entries, in order, without the trailing newline.
	// They share one backing buffer; each has its capacity clipped to its
	// length, so appending to one never overwrites another.
	Entries [][]byte
}

// Decoder decodes and verifies segments. It is safe for concurrent use;
// create one and share it. All calls share its *zstd.Decoders through their
// concurrency-safe DecodeAll.
type Decoder struct {
	opts decoderOptions
	// limit is the effective cap on uncompressed bytes per segment.
	limit uint64
	zdec  *zstd.Decoder
	// zsole decodes a payload that is one frame with a content checksum. It
	// skips zstd's check of that checksum: the checksum is the low 32 bits of
	// the xxhash64 of the frame's content, which for one frame is the JSONL's
	// xxhash64 the segment's metadata declares, so decompress checks both
	// from one pass over the JSONL instead of two (see soleFrameChecksum).
	zsole *zstd.Decoder
	// packed keeps the origins and entry index of the segments it decodes as
	// stored (PackedIndex); view marks a Decoder that PackedIndex made, which
	// shares its zstd decoders with the one it was made from.
	packed, view bool
}

// NewDecoder returns a Decoder configured by opts.
func NewDecoder(opts ...DecoderOption) (*Decoder, error) {
	o := decoderOptions{
		maxEntrySize:   DefaultMaxEntrySize,
		maxSegmentSize: DefaultMaxSegmentSize,
		maxMemory:      DefaultMaxDecoderMemory,
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	limit := min(uint64(o.maxSegmentSize), o.maxMemory)
	window := max(limit, zstd.MinWindowSize)
	zopts := []zstd.DOption{
		zstd.WithDecoderConcurrency(0), // one block decoder per GOMAXPROCS for DecodeAll
		zstd.WithDecoderMaxMemory(limit),
		zstd.WithDecoderMaxWindow(window),
		zstd.WithDecodeAllCapLimit(true), // never decode past the declared length
	}
	zdec, err := zstd.NewReader(nil, zopts...)
	if err != nil {
		return nil, fmt.Errorf("segment: new zstd decoder: %w", err)
	}
	zsole, err := zstd.NewReader(nil, append(zopts, zstd.IgnoreChecksum(true))...)
	if err != nil {
		zdec.Close()
		return nil, fmt.Errorf("segment: new zstd decoder: %w", err)
	}
	return &Decoder{opts: o, limit: limit, zdec: zdec, zsole: zsole}, nil
}

// PackedIndex returns a Decoder that decodes and verifies as d does, with d's
// limits and zstd decoders, except that the Meta of a segment it decodes holds
// the origins and the entry index as the segment stores them: Meta.Origins and
// Meta.Index stay nil, Meta.OriginAt and Meta.IndexAt read them (HasOrigins,
// HasIndex say whether there are any). A reader that keeps only some of it (the
// ids of a large session) then never holds an Origin and an IndexEntry per
// entry, 64 bytes, beside what it keeps. The returned Decoder is a view of d:
// its Close does nothing, and it must not be used once d is closed.
func (d *Decoder) PackedIndex() *Decoder {
	v := *d
	v.packed, v.view = true, true
	return &v
}

// ReadMeta parses and verifies only the leading metadata frame of data,
// which may be a prefix of a segment; n is the number of bytes the frame
// used (the zstd data starts at data[n:]). If data is too short, the error
// matches ErrTruncated; MetaSize tells how many bytes are needed.
func (d *Decoder) ReadMeta(data []byte) (meta Meta, n int, err error) {
	return parseMeta(data, false)
}

// Decode decodes and verifies a whole segment: the metadata frame and its
// checksum, the object length, the declared size against the limits (before
// decompressing), the zstd data (output capped at the declared size), the
// length and xxhash64 of the JSONL, the entry count and each entry's size.
//
// Errors: corruption and truncation match ErrCorrupt (and ErrTruncated,
// ErrBadMagic or ErrChecksum where they apply) and are *CorruptionError;
// ErrUnsupportedVersion for a newer format; ErrTooLarge when the declared
// size exceeds the limits; ErrEntryTooLarge for an oversized entry.
func (d *Decoder) Decode(data []byte) (*Segment, error) {
	return d.decodeInto(data, true, nil)
}

// decodeInto is Decode with the output buffer given: buf, when not nil, has
// exactly the raw length the metadata of data declares (DecodeFrom made it
// before the body arrived); otherwise it is made once the checks pass.
// parallel false decodes the zstd data as one stream even when it holds
// several frames (tests compare the two paths).
func (d *Decoder) decodeInto(data []byte, parallel bool, buf []byte) (*Segment, error) {
	m, n, err := d.readMeta(data)
	if err != nil {
		return nil, err
	}
	if err := checkLength(m, n, uint64(len(data))); err != nil {
		return nil, err
	}
	payload := data[n:]
	if uint64(len(buf)) != m.RawLen {
		buf = rawBuffer(m.RawLen)
	}
	raw, check, sum, err := d.decompress(payload, buf, m.EntryCount, parallel)
	if err != nil {
		switch {
		case errors.Is(err, zstd.ErrDecoderSizeExceeded):
			return nil, corrupt(n, ErrTooLarge, "zstd data decompresses to more than the declared %d bytes", m.RawLen)
		case errors.Is(err, zstd.ErrWindowSizeExceeded):
			// Our writers never ask for a window over the declared size.
			return nil, corrupt(n, ErrTooLarge, "zstd window exceeds decoder memory limit %d", d.limit)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, corrupt(n, ErrTruncated, "zstd data ends early")
		}
		return nil, corrupt(n, err, "decompress")
	}
	return d.verify(m, n, raw, check, sum)
}

// rawSum is the xxhash64 of a segment's JSONL when decompress computed it
// (ok), which verify then need not compute again.
type rawSum struct {
	v  uint64
	ok bool
}

// readMeta parses the metadata frame at the start of data and checks the
// declared size against the limit: the checks Decode makes before it looks
// at the object's length.
func (d *Decoder) readMeta(data []byte) (Meta, int, error) {
	m, n, err := parseMeta(data, d.packed)
	if err != nil {
		return Meta{}, 0, err
	}
	if m.RawLen > d.limit {
		return Meta{}, 0, fmt.Errorf("segment declares %d uncompressed bytes, limit %d: %w", m.RawLen, d.limit, ErrTooLarge)
	}
	return m, n, nil
}

// checkLength checks the length of an object whose metadata frame of n bytes
// declares m.
func checkLength(m Meta, n int, size uint64) error {
	switch payload := size - uint64(n); {
	case payload < m.PayloadLen:
		return corrupt(int(size), ErrTruncated, "segment is %d bytes, metadata declares %d", size, uint64(n)+m.PayloadLen)
	case payload > m.PayloadLen:
		return corrupt(n+int(m.PayloadLen), nil, "%d unexpected bytes after the zstd data", payload-m.PayloadLen)
	}
	return nil
}

// verify checks decompressed JSONL against its metadata (length, checksum,
// framing, index) and cuts it into entries. n is the payload offset, used
// for error reports. check, if not nil, holds what the frame workers already
// hashed and cut (see frameCheck); verify does the rest itself.
func (d *Decoder) verify(m Meta, n int, raw []byte, check *frameCheck, sum rawSum) (*Segment, error) {
	defer trace.StartRegion(context.Background(), "verify segment").End()
	if uint64(len(raw)) != m.RawLen {
		return nil, corrupt(n, nil, "zstd data decompresses to %d bytes, metadata declares %d", len(raw), m.RawLen)
	}
	got, hashed, entries := check.result()
	if sum.ok {
		got, hashed = sum.v, true
	}
	if !hashed {
		got = xxhash.Sum64(raw)
	}
	if got != m.Checksum {
		return nil, corrupt(n, ErrChecksum, "entries checksum %016x, metadata declares %016x", got, m.Checksum)
	}
	if entries == nil {
		var err error
		if entries, err = d.split(raw, m.EntryCount, n); err != nil {
			return nil, err
		}
	}
	if m.HasIndex() {
		for i, e := range entries {
			if l := m.IndexAt(i).Len; int(l) != len(e) {
				return nil, corrupt(n, nil, "index says entry %d has %d bytes, it has %d", i, l, len(e))
			}
		}
	}
	if err := d.checkRefs(m, n, entries); err != nil {
		return nil, err
	}
	return &Segment{Meta: m, Entries: entries}, nil
}

// checkRefs checks the payload references of a decoded segment: each stands in
// its entry where the metadata says, and no entry resolves to more than the
// entry limit.
func (d *Decoder) checkRefs(m Meta, n int, entries [][]byte) error {
	if m.Refs == nil {
		return nil
	}
	if err := checkRefsIn(m.Refs, entries); err != nil {
		return corrupt(n, nil, "%v", err)
	}
	for k := 0; k < len(m.Refs); {
		e := m.Refs[k].Entry
		refs := EntryRefs(m.Refs[k:], e)
		if l := ResolvedLen(len(entries[e]), refs); l > uint64(d.opts.maxEntrySize) {
			return fmt.Errorf("segment entry %d resolves to %d bytes, limit %d: %w", e, l, d.opts.maxEntrySize, ErrEntryTooLarge)
		}
		k += len(refs)
	}
	return nil
}

// decompress decodes the zstd data into buf, whose length is the raw length
// (the caller checked it against the limit). Data of several frames whose
// sizes add up to rawLen (see splitFrames) is decoded frame by frame in
// parallel when parallel is set; anything else, and any failure of that path,
// goes through one DecodeAll of the whole data capped at rawLen, whose errors
// Decode reports.
//
// Frames decoded in parallel are also hashed and cut as they finish; the
// frameCheck returned says how far that went (nil for one stream). Data that
// is one frame with a content checksum is hashed once, after its one call:
// that hash checks the frame's checksum here, and is returned for verify to
// check the JSONL's.
func (d *Decoder) decompress(payload, buf []byte, count uint32, parallel bool) ([]byte, *frameCheck, rawSum, error) {
	rawLen := uint64(len(buf))
	// One frame cannot be split, so its headers are walked once, here.
	want, sole := soleFrameChecksum(payload)
	if parallel && !sole {
		if spans, ok := splitFrames(payload, rawLen); ok {
			check := newFrameCheck(buf, d.opts.maxEntrySize, count)
			if d.decodeFrames(payload, spans, buf, check) {
				return buf, check, rawSum{}, nil
			}
		}
	}
	zdec := d.zdec
	if sole {
		zdec = d.zsole
	}
	region := trace.StartRegion(context.Background(), "decompress segment")
	raw, err := zdec.DecodeAll(payload, buf[:0:cap(buf)])
	region.End()
	if err == nil && uint64(len(raw)) > rawLen {
		// Into the spare capacity rawBuffer leaves: past the declared length,
		// as if the cap had stopped it.
		err = zstd.ErrDecoderSizeExceeded
	}
	if err != nil || !sole {
		return raw, nil, rawSum{}, err
	}
	// The check zsole skipped, made from the hash verify needs anyway.
	sum := xxhash.Sum64(raw)
	if uint32(sum) != want {
		return nil, nil, rawSum{}, zstd.ErrCRCMismatch
	}
	return raw, nil, rawSum{sum, true}, nil
}

// soleFrameChecksum returns the content checksum of payload when payload is
// one standard zstd frame (parseFrame) that ends with one (its
// Content_Checksum_Flag set): the frame's last 4 bytes, the low 32 bits of the
// xxhash64 of its content, little-endian. A payload of several frames, a frame
// without a checksum or one whose headers do not walk to its end is left to the
// checking decoder.
func soleFrameChecksum(payload []byte) (uint32, bool) {
	_, n, crc, ok := parseFrame(payload)
	if !ok || n != len(payload) || !crc {
		return 0, false
	}
	return binary.LittleEndian.Uint32(payload[n-4:]), true
}

// decodeSlack is the spare capacity rawBuffer leaves after the raw length. zstd
// decodes a block with wide copies that may write a little past its end, and
// falls back to byte-exact (slower) copies for a block that ends within 32
// bytes of the buffer's capacity: without the slack, every block that ends a
// segment (all of a small one) would take the slow copies.
const decodeSlack = 64

// rawBuffer makes the buffer a segment of n raw bytes is decoded into: length
// n, with decodeSlack bytes of capacity past it. Entries are cut from it with
// their capacity at their own end, so the slack never reaches a caller.
func rawBuffer(n uint64) []byte {
	return make([]byte, n, n+decodeSlack)
}

// split cuts verified JSONL into entries. off is the payload offset, used
// for error reports.
func (d *Decoder) split(raw []byte, count uint32, off int) ([][]byte, error) {
	if raw[len(raw)-1] != '\n' {
		return nil, corrupt(off, nil, "JSONL does not end with a newline")
	}
	entries := make([][]byte, 0, count)
	for pos := 0; pos < len(raw); {
		j := bytes.IndexByte(raw[pos:], '\n')
		switch {
		case j == 0:
			return nil, corrupt(off, nil, "empty entry %d at uncompressed offset %d", len(entries), pos)
		case j > d.opts.maxEntrySize:
			return nil, fmt.Errorf("segment entry %d at uncompressed offset %d is %d bytes, limit %d: %w", len(entries), pos, j, d.opts.maxEntrySize, ErrEntryTooLarge)
		case len(entries) == int(count):
			return nil, corrupt(off, nil, "more entries than the declared %d", count)
		}
		entries = append(entries, raw[pos:pos+j:pos+j])
		pos += j + 1
	}
	if len(entries) != int(count) {
		return nil, corrupt(off, nil, "%d entries, metadata declares %d", len(entries), count)
	}
	return entries, nil
}

// Close releases the zstd decoders. The Decoder must not be used afterwards.
// Close of a view (PackedIndex) does nothing: its decoders are the ones of the
// Decoder it was made from.
func (d *Decoder) Close() error {
	if d.view {
		return nil
	}
	d.zdec.Close()
	d.zsole.Close()
	return nil
}
