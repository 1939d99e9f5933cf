package segment

import (
	"bytes"
	"context"
	"runtime/trace"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// frameCheck verifies the frames of a multi-frame payload while the others
// are still being decoded, so that once the last frame is out only its own
// share of the checks is left:
//
//   - the worker that decoded a frame cuts it into entries (our encoder cuts
//     frames at entry boundaries), and
//   - the xxhash64 of the JSONL advances over each frame as soon as it and
//     every frame before it are decoded (a digest takes its input in order).
//
// It only ever answers what verify would compute from the whole JSONL. A frame
// that does not cut cleanly on its own (an entry across a frame boundary, as
// another encoder may write; an empty or oversized entry; a frame that is not
// JSONL at all) just leaves the cutting to verify's one pass, which then finds
// the same entries or reports the error it always did.
type frameCheck struct {
	raw      []byte
	maxEntry int
	count    uint32 // the entries the metadata declares in raw

	mu      sync.Mutex
	spans   []frameSpan // every frame handed out, in payload order
	done    []bool      // decoded
	cuts    [][][]byte  // each decoded frame's entries; nil if it did not cut cleanly
	hashed  int         // frames [0, hashed) are in digest
	hashing bool        // a worker is hashing; others leave their frames to it
	digest  *xxhash.Digest
}

func newFrameCheck(raw []byte, maxEntry int, count uint32) *frameCheck {
	return &frameCheck{raw: raw, maxEntry: maxEntry, count: count, digest: xxhash.New()}
}

// expect returns how many entries a frame of size bytes likely holds: its share
// of the declared count, a little over (cutFrame's room, so that it seldom
// grows its slice; grown by appends from nothing, the slices of a 100k-entry
// segment's frames allocated 3.8× what they finally held).
func (c *frameCheck) expect(size int) int {
	if len(c.raw) == 0 {
		return 0
	}
	n := uint64(size) * uint64(c.count) / uint64(len(c.raw))
	return int(n + n/16 + 4)
}

// add registers the next frame of the payload and returns its number.
func (c *frameCheck) add(span frameSpan) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans = append(c.spans, span)
	c.done = append(c.done, false)
	c.cuts = append(c.cuts, nil)
	return len(c.spans) - 1
}

// decoded records that frame i is in place in raw: it cuts the frame into
// entries, then hashes every frame that is now next in order, unless another
// worker is already doing so (that worker then takes this frame too).
func (c *frameCheck) decoded(i int) {
	c.mu.Lock()
	span := c.spans[i]
	c.mu.Unlock()
	defer trace.StartRegion(context.Background(), "check frame").End()
	cut := cutFrame(c.raw[span.out:span.out+span.size], c.maxEntry, c.expect(span.size))

	c.mu.Lock()
	defer c.mu.Unlock()
	c.cuts[i], c.done[i] = cut, true
	if c.hashing {
		return
	}
	c.hashing = true
	for c.hashed < len(c.done) && c.done[c.hashed] {
		s := c.spans[c.hashed]
		c.hashed++
		c.mu.Unlock()
		_, _ = c.digest.Write(c.raw[s.out : s.out+s.size]) // never fails
		c.mu.Lock()
	}
	c.hashing = false
}

// result returns the checksum of the whole JSONL if every frame was hashed
// and the frames cover it, and its entries if every frame cut cleanly into
// the declared count of entries in all; nil entries leave the cutting to
// verify. Call it only once every worker has finished.
func (c *frameCheck) result() (sum uint64, hashed bool, entries [][]byte) {
	if c == nil {
		return 0, false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	covered := 0
	for _, s := range c.spans {
		if s.out != covered {
			return 0, false, nil
		}
		covered += s.size
	}
	if c.hashed != len(c.spans) || covered != len(c.raw) || len(c.spans) == 0 {
		return 0, false, nil
	}
	total := 0
	for _, cut := range c.cuts {
		if cut == nil {
			return c.digest.Sum64(), true, nil
		}
		total += len(cut)
	}
	if total != int(c.count) {
		return c.digest.Sum64(), true, nil
	}
	entries = make([][]byte, 0, total)
	for _, cut := range c.cuts {
		entries = append(entries, cut...)
	}
	return c.digest.Sum64(), true, entries
}

// cutFrame cuts the JSONL of one frame into entries, each clipped to its
// length, if the frame ends with a newline and holds no empty entry and none
// over maxEntry bytes; otherwise it returns nil. expect is room for the
// entries it likely holds.
func cutFrame(p []byte, maxEntry, expect int) [][]byte {
	if len(p) == 0 || p[len(p)-1] != '\n' {
		return nil
	}
	entries := make([][]byte, 0, min(expect, len(p)/2))
	for pos := 0; pos < len(p); {
		j := bytes.IndexByte(p[pos:], '\n')
		if j == 0 || j > maxEntry {
			return nil
		}
		entries = append(entries, p[pos:pos+j:pos+j])
		pos += j + 1
	}
	return entries
}
