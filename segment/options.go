package segment

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// DefaultMaxDecoderMemory is the default bound on the decompressed bytes and
// the zstd window a Decoder holds for one segment.
const DefaultMaxDecoderMemory = DefaultMaxSegmentSize

type encoderOptions struct {
	level          zstd.EncoderLevel
	maxEntrySize   int
	maxSegmentSize int64
	frameSize      int
}

// DefaultFrameSize is the default number of uncompressed bytes an Encoder
// puts in one zstd frame (see WithFrameSize).
const DefaultFrameSize = 1 << 20 // 1 MiB

// EncoderOption configures an Encoder.
type EncoderOption func(*encoderOptions) error

// WithEncoderLevel sets the zstd compression level. The default is
// zstd.SpeedDefault.
func WithEncoderLevel(l zstd.EncoderLevel) EncoderOption {
	return func(o *encoderOptions) error {
		if l < zstd.SpeedFastest || l > zstd.SpeedBestCompression {
			return fmt.Errorf("segment: unknown zstd encoder level %d", l)
		}
		o.level = l
		return nil
	}
}

// WithEncoderMaxEntrySize sets the largest entry (without its newline) Encode
// accepts; larger ones get ErrEntryTooLarge. The default is
// DefaultMaxEntrySize.
func WithEncoderMaxEntrySize(n int) EncoderOption {
	return func(o *encoderOptions) error {
		if n <= 0 {
			return fmt.Errorf("segment: max entry size %d must be positive", n)
		}
		o.maxEntrySize = n
		return nil
	}
}

// WithEncoderMaxSegmentSize sets the largest uncompressed segment Encode
// writes; larger batches get ErrTooLarge. The default is
// DefaultMaxSegmentSize, so that a default Decoder accepts every segment a
// default Encoder writes.
func WithEncoderMaxSegmentSize(n int64) EncoderOption {
	return func(o *encoderOptions) error {
		if n <= 0 {
			return fmt.Errorf("segment: max segment size %d must be positive", n)
		}
		o.maxSegmentSize = n
		return nil
	}
}

// WithFrameSize sets about how many uncompressed bytes Encode puts in one zstd
// frame. A batch of at most n bytes is one frame; a larger one is cut into
// frames at entry boundaries, each holding whole entries and at most n bytes
// unless a single entry is longer (it then has a frame to itself). Frames are
// compressed in parallel and can be decompressed in parallel. n must be
// positive; the default is DefaultFrameSize.
func WithFrameSize(n int) EncoderOption {
	return func(o *encoderOptions) error {
		if n <= 0 {
			return fmt.Errorf("segment: frame size %d must be positive", n)
		}
		o.frameSize = n
		return nil
	}
}

type decoderOptions struct {
	maxEntrySize   int
	maxSegmentSize int64
	maxMemory      uint64
}

// DecoderOption configures a Decoder.
type DecoderOption func(*decoderOptions) error

// WithMaxEntrySize sets the largest entry (without its newline) Decode
// accepts; larger ones get ErrEntryTooLarge. The default is
// DefaultMaxEntrySize.
func WithMaxEntrySize(n int) DecoderOption {
	return func(o *decoderOptions) error {
		if n <= 0 {
			return fmt.Errorf("segment: max entry size %d must be positive", n)
		}
		o.maxEntrySize = n
		return nil
	}
}

// WithMaxSegmentSize sets the largest uncompressed segment Decode accepts,
// the decompression-bomb guard. Decode compares the size declared in the
// metadata with it before decompressing and caps the actual output at the
// declared size. Larger segments get ErrTooLarge. The default is
// DefaultMaxSegmentSize.
func WithMaxSegmentSize(n int64) DecoderOption {
	return func(o *decoderOptions) error {
		if n <= 0 {
			return fmt.Errorf("segment: max segment size %d must be positive", n)
		}
		o.maxSegmentSize = n
		return nil
	}
}

// WithMaxDecoderMemory bounds the memory of the zstd decoder per segment: it
// is passed as zstd.WithDecoderMaxMemory (most bytes one decode may produce)
// and zstd.WithDecoderMaxWindow (largest window a frame may ask for), each
// also capped by the max segment size. It must be at least 1 KiB. The
// default is DefaultMaxDecoderMemory.
func WithMaxDecoderMemory(n uint64) DecoderOption {
	return func(o *decoderOptions) error {
		if n < zstd.MinWindowSize {
			return fmt.Errorf("segment: max decoder memory %d must be at least %d", n, zstd.MinWindowSize)
		}
		o.maxMemory = n
		return nil
	}
}
