package segment

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// DecodeFrom reads a segment of size bytes from r and decodes it as Decode
// does, with the same results and errors, but starts decompressing each zstd
// frame of a multi-frame segment as soon as all its bytes have arrived, so
// that decompression overlaps the download. It reads the object into one
// buffer, and no more than size bytes from r.
//
// If r ends before size bytes, the error is the one Decode gives for the
// bytes read (ErrTruncated for a prefix of a segment); should those bytes
// happen to form a whole segment, it is still ErrTruncated, since the object
// was said to be longer. Errors of r other than io.EOF are returned wrapped,
// and match none of the package's sentinels.
func (d *Decoder) DecodeFrom(r io.Reader, size int64) (*Segment, error) {
	seg, _, err := d.decodeFrom(r, size)
	return seg, err
}

// decodeFrom is DecodeFrom; streamed tells whether the frames were decoded
// while the payload arrived (for tests).
func (d *Decoder) decodeFrom(r io.Reader, size int64) (seg *Segment, streamed bool, err error) {
	if size < 0 {
		return nil, false, fmt.Errorf("segment: decode from reader: negative size %d", size)
	}
	// The metadata frame: its length from the first 8 bytes, then the frame.
	head := make([]byte, min(size, frameHeaderSize))
	if got, err := readFull(r, head); err != nil {
		return nil, false, err
	} else if got < len(head) {
		seg, err = d.short(head[:got], size)
		return seg, false, err
	}
	if size < frameHeaderSize {
		seg, err = d.Decode(head)
		return seg, false, err
	}
	n, err := MetaSize(head)
	if err != nil {
		return nil, false, err
	}
	metaFrame := make([]byte, min(size, int64(n)))
	copy(metaFrame, head)
	if got, err := readFull(r, metaFrame[len(head):]); err != nil {
		return nil, false, err
	} else if len(head)+got < len(metaFrame) {
		seg, err = d.short(metaFrame[:len(head)+got], size)
		return seg, false, err
	}
	if size < int64(n) {
		seg, err = d.Decode(metaFrame) // truncated in the metadata frame
		return seg, false, err
	}
	m, _, err := d.readMeta(metaFrame)
	if err != nil {
		return nil, false, err
	}

	total := uint64(n) + m.PayloadLen
	if uint64(size) < total {
		// Too short whatever arrives: count what does, keep nothing.
		got, err := io.Copy(io.Discard, io.LimitReader(r, size-int64(n)))
		if err != nil {
			return nil, false, fmt.Errorf("segment: read: %w", err)
		}
		return nil, false, checkLength(m, n, uint64(n)+uint64(got))
	}

	data := make([]byte, total)
	copy(data, metaFrame)
	// The output buffer is made (and zeroed) now, while the body is on its way,
	// rather than once the first frame is in.
	fs := newFrameStream(d, data[n:], rawBuffer(m.RawLen), m.EntryCount)
	got := n
	var rerr error
	for got < len(data) {
		k, err := r.Read(data[got:])
		got += k
		fs.feed(got - n)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = fmt.Errorf("segment: read: %w", err)
			}
			break
		}
	}
	ok := fs.finish()
	switch {
	case rerr != nil:
		return nil, false, rerr
	case got < len(data):
		seg, err = d.short(data[:got], size)
		return seg, false, err
	}
	if extra := size - int64(total); extra > 0 {
		more, err := io.Copy(io.Discard, io.LimitReader(r, extra))
		switch {
		case err != nil:
			return nil, false, fmt.Errorf("segment: read: %w", err)
		case more == 0:
			seg, err = d.short(data, size)
			return seg, false, err
		}
		return nil, false, checkLength(m, n, total+uint64(more))
	}
	if !ok {
		seg, err = d.decodeInto(data, true, fs.raw)
		return seg, false, err
	}
	seg, err = d.verify(m, n, fs.raw, fs.check, rawSum{})
	return seg, true, err
}

// readFull reads len(p) bytes from r unless it ends (io.EOF) first; any other
// error of r is returned. Unlike io.ReadFull it does not turn an early io.EOF
// into io.ErrUnexpectedEOF, so that an io.ErrUnexpectedEOF of r itself (an HTTP
// body whose connection was cut) stays a failed read, not a short segment.
func readFull(r io.Reader, p []byte) (int, error) {
	got := 0
	for got < len(p) {
		k, err := r.Read(p[got:])
		got += k
		switch {
		case errors.Is(err, io.EOF):
			return got, nil
		case err != nil:
			return got, fmt.Errorf("segment: read: %w", err)
		}
	}
	return got, nil
}

// short reports a reader that ended after the bytes in data, short of size:
// Decode's error for them, which matches ErrTruncated for any prefix of a
// segment, or a truncation if they form a segment of their own.
func (d *Decoder) short(data []byte, size int64) (*Segment, error) {
	if _, err := d.Decode(data); err != nil {
		return nil, err
	}
	return nil, corrupt(len(data), ErrTruncated, "reader ended after %d of %d bytes", len(data), size)
}

// frameStream decodes the frames of a payload as it arrives: each frame, once
// complete, goes to one of at most GOMAXPROCS workers that decode it into its
// place in raw. Any surprise (a header the parallel path does not take,
// sizes that do not add up, a frame that fails) turns it off; the caller then
// decodes the whole object with Decode.
type frameStream struct {
	d       *Decoder
	payload []byte
	rawLen  uint64
	raw     []byte // rawLen bytes, the output
	count   uint32 // the entries the metadata declares

	// The frame being received.
	pos    int // its start in payload
	hdr    bool
	size   uint64
	crc    bool
	blocks int // header of its next block not yet walked; its end once walked
	walked bool
	out    uint64 // its offset in raw
	frames int    // frames handed out

	off     bool
	failed  atomic.Bool
	jobs    chan frameJob
	workers sync.WaitGroup
	check   *frameCheck // hashes and cuts each frame once decoded; made with the first job
}

// frameJob is frame number i of the payload, for a worker to decode.
type frameJob struct {
	i    int
	span frameSpan
}

func newFrameStream(d *Decoder, payload, raw []byte, count uint32) *frameStream {
	return &frameStream{d: d, payload: payload, raw: raw, rawLen: uint64(len(raw)), count: count}
}

// feed hands out every frame that lies wholly in payload[:got].
func (s *frameStream) feed(got int) {
	for !s.off && s.pos < len(s.payload) {
		span, ok := s.next(s.payload[s.pos:got])
		if !ok {
			return
		}
		if s.jobs == nil {
			// A single-frame segment (every one-turn flush) never gets here.
			s.check = newFrameCheck(s.raw, s.d.opts.maxEntrySize, s.count)
			s.jobs = make(chan frameJob, 64)
			for range runtime.GOMAXPROCS(0) {
				s.workers.Go(s.work)
			}
		}
		s.jobs <- frameJob{i: s.check.add(span), span: span}
	}
}

// next walks the frame starting at p[0] as far as p goes and returns it once
// complete.
func (s *frameStream) next(p []byte) (frameSpan, bool) {
	var st walkStatus
	if !s.hdr {
		var n int
		if s.size, n, s.crc, st = parseFrameHeader(p); st != walkDone {
			s.off = st == walkBad
			return frameSpan{}, false
		}
		s.hdr, s.blocks = true, n
	}
	if !s.walked {
		if s.blocks, st = walkBlocks(p, s.blocks); st != walkDone {
			s.off = st == walkBad
			return frameSpan{}, false
		}
		s.walked = true
		if s.crc {
			s.blocks += 4
		}
	}
	if len(p) < s.blocks {
		return frameSpan{}, false
	}
	end := s.pos + s.blocks
	last := end == len(s.payload)
	size := s.size
	switch {
	case s.frames == 0 && last:
		s.off = true // one frame: nothing to overlap
	case size == 0 && last && s.out < s.rawLen:
		size = s.rawLen - s.out // its size left out: the rest
	case size == 0, size > s.rawLen-s.out, last && s.out+size != s.rawLen:
		s.off = true
	}
	if s.off {
		return frameSpan{}, false
	}
	span := frameSpan{start: s.pos, end: end, out: int(s.out), size: int(size)}
	s.pos, s.out, s.frames = end, s.out+size, s.frames+1
	s.hdr, s.walked = false, false
	return span, true
}

func (s *frameStream) work() {
	for job := range s.jobs {
		if s.failed.Load() {
			continue
		}
		if !s.d.decodeFrame(s.payload, job.span, s.raw) {
			s.failed.Store(true)
			continue
		}
		s.check.decoded(job.i)
	}
}

// finish waits for the workers and reports whether the whole payload arrived
// and decoded into raw.
func (s *frameStream) finish() bool {
	if s.jobs != nil {
		close(s.jobs)
		s.workers.Wait()
	}
	return !s.off && s.jobs != nil && s.pos == len(s.payload) && !s.failed.Load()
}
