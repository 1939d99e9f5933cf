package segment

import (
	"context"
	"encoding/binary"
	"runtime"
	"runtime/trace"
	"sync"
	"sync/atomic"
)

// frameSpan locates one standard zstd frame of a segment's zstd data: its
// compressed bytes payload[start:end] decompress to size bytes at offset out
// of the JSONL.
type frameSpan struct {
	start, end int
	out, size  int
}

// zstd frame and block header fields (RFC 8878, section 3.1.1).
const (
	fhdSingleSegment = 1 << 5 // Single_Segment_Flag: no window descriptor
	fhdReserved      = 1 << 3 // Reserved_Bit: must be 0
	fhdChecksum      = 1 << 2 // Content_Checksum_Flag: 4 bytes after the last block

	blockRaw        = 0
	blockRLE        = 1
	blockCompressed = 2
)

// splitFrames walks the frame and block headers of payload and returns its
// frames when the payload is two or more standard zstd frames, back to back
// with nothing else, whose decompressed sizes add up to rawLen. Every frame
// must declare its content size, except that one may leave it out (zstd
// encoders omit it for frames under 256 bytes, which the last frame of a
// segment can be): that frame gets what the others leave of rawLen. Otherwise
// (one frame, a header that does not parse, a skippable frame, a dictionary,
// two frames of unknown size, sizes that do not add up) it returns false: the
// caller then decodes the payload as one stream, which reports any damage. The
// walk reads headers only; the zstd decoder checks each frame again.
func splitFrames(payload []byte, rawLen uint64) ([]frameSpan, bool) {
	size, n, _, ok := parseFrame(payload)
	if !ok || n == len(payload) {
		return nil, false
	}
	spans := []frameSpan{{start: 0, end: n}}
	sizes := []uint64{size}
	for pos := n; pos < len(payload); pos += n {
		size, n, _, ok = parseFrame(payload[pos:])
		if !ok {
			return nil, false
		}
		spans = append(spans, frameSpan{start: pos, end: pos + n})
		sizes = append(sizes, size)
	}
	unknown := -1
	var sum uint64
	for i, size := range sizes {
		switch {
		case size == 0 && unknown >= 0:
			return nil, false
		case size == 0:
			unknown = i
		case size > rawLen-sum:
			return nil, false
		}
		sum += size
	}
	if unknown >= 0 {
		if sum >= rawLen {
			return nil, false
		}
		sizes[unknown] = rawLen - sum
	} else if sum != rawLen {
		return nil, false
	}
	out := 0
	for i := range spans {
		spans[i].out, spans[i].size = out, int(sizes[i])
		out += int(sizes[i])
	}
	return spans, true
}

// parseFrame reads the standard zstd frame at the start of p: its declared
// content size (0 when the header leaves it out), its length in bytes and
// whether it ends with a 4-byte content checksum. ok is false when p does not
// start with a complete frame, the frame uses a dictionary or declares a
// content size of 0.
func parseFrame(p []byte) (size uint64, n int, crc, ok bool) {
	size, hdr, crc, st := parseFrameHeader(p)
	if st != walkDone {
		return 0, 0, false, false
	}
	n, st = walkBlocks(p, hdr)
	if st != walkDone {
		return 0, 0, false, false
	}
	if crc {
		n += 4
	}
	if n > len(p) {
		return 0, 0, false, false
	}
	return size, n, crc, true
}

// walkStatus is the outcome of reading a zstd header from the bytes at hand.
type walkStatus int

const (
	walkDone  walkStatus = iota // read completely
	walkShort                   // more bytes needed
	walkBad                     // not something the parallel path takes
)

// parseFrameHeader reads the frame header at the start of p: the declared
// content size (0 when left out), the header length and whether a 4-byte
// checksum follows the last block. A header that is not a standard frame's,
// uses a dictionary or declares a content size of 0 is walkBad.
func parseFrameHeader(p []byte) (size uint64, n int, crc bool, st walkStatus) {
	if len(p) < 5 {
		for i, b := range p {
			if b != byte(zstdFrameMagic>>(8*i)) {
				return 0, 0, false, walkBad
			}
		}
		return 0, 0, false, walkShort
	}
	if binary.LittleEndian.Uint32(p) != zstdFrameMagic {
		return 0, 0, false, walkBad
	}
	fhd := p[4]
	if fhd&fhdReserved != 0 {
		return 0, 0, false, walkBad
	}
	single := fhd&fhdSingleSegment != 0
	dictLen := [4]int{0, 1, 2, 4}[fhd&3]
	sizeLen := [4]int{0, 2, 4, 8}[fhd>>6]
	if sizeLen == 0 && single {
		sizeLen = 1
	}
	pos := 5
	if !single {
		pos++ // window descriptor
	}
	if len(p) < pos+dictLen+sizeLen {
		return 0, 0, false, walkShort
	}
	for _, b := range p[pos : pos+dictLen] {
		if b != 0 {
			return 0, 0, false, walkBad // a dictionary: leave it to the stream decoder
		}
	}
	pos += dictLen
	le := binary.LittleEndian
	switch sizeLen {
	case 0: // content size not declared
	case 1:
		size = uint64(p[pos])
	case 2:
		size = uint64(le.Uint16(p[pos:])) + 256
	case 4:
		size = uint64(le.Uint32(p[pos:]))
	default:
		size = le.Uint64(p[pos:])
	}
	pos += sizeLen
	if sizeLen > 0 && size == 0 {
		return 0, 0, false, walkBad // an empty frame: nothing to gain
	}
	return size, pos, fhd&fhdChecksum != 0, walkDone
}

// walkBlocks walks the block headers of a frame in p from the block header at
// pos. Done, it returns the position just after the last block; short, the
// position of the first block not wholly in p, to resume from.
func walkBlocks(p []byte, pos int) (int, walkStatus) {
	for {
		if len(p)-pos < 3 {
			return pos, walkShort
		}
		h := uint32(p[pos]) | uint32(p[pos+1])<<8 | uint32(p[pos+2])<<16
		blockLen := int(h >> 3)
		switch (h >> 1) & 3 {
		case blockRaw, blockCompressed:
		case blockRLE:
			blockLen = 1
		default:
			return pos, walkBad // reserved block type
		}
		if len(p)-pos-3 < blockLen {
			return pos, walkShort
		}
		pos += 3 + blockLen
		if h&1 != 0 { // Last_Block
			return pos, walkDone
		}
	}
}

// decodeFrames decompresses each frame of payload straight into its place in
// buf, in parallel on at most GOMAXPROCS goroutines, all finished before it
// returns. It reports whether every frame decoded to exactly its declared size
// in place; on false, buf holds garbage and the caller decodes the payload
// again as one stream, so that errors are reported the one usual way. check,
// if not nil, hashes and cuts each frame once it is decoded.
func (d *Decoder) decodeFrames(payload []byte, spans []frameSpan, buf []byte, check *frameCheck) bool {
	if check != nil {
		for _, s := range spans {
			check.add(s)
		}
	}
	return inParallel(len(spans), func(i int) bool {
		if !d.decodeFrame(payload, spans[i], buf) {
			return false
		}
		if check != nil {
			check.decoded(i)
		}
		return true
	})
}

// decodeFrame decompresses one frame straight into its place in buf and
// reports whether it decoded to exactly its declared size there.
func (d *Decoder) decodeFrame(payload []byte, s frameSpan, buf []byte) bool {
	defer trace.StartRegion(context.Background(), "decode frame").End()
	// The last frame may use buf's spare capacity (see rawBuffer); any other
	// ends where the next one starts, which another worker may be writing.
	limit := s.out + s.size
	if limit == len(buf) {
		limit = cap(buf)
	}
	dst := buf[s.out:s.out:limit]
	out, err := d.zdec.DecodeAll(payload[s.start:s.end], dst)
	return err == nil && len(out) == s.size && &out[0] == &buf[s.out]
}

// inParallel calls fn(i) for every i in [0, n), on at most GOMAXPROCS
// goroutines (the caller's among them), all finished before it returns. Once
// a call returns false no further call starts; inParallel then returns false.
func inParallel(n int, fn func(i int) bool) bool {
	var next atomic.Int64
	var failed atomic.Bool
	work := func() {
		for !failed.Load() {
			i := int(next.Add(1)) - 1
			if i >= n {
				return
			}
			if !fn(i) {
				failed.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return !failed.Load()
}
