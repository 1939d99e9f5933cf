package segment

import (
	"errors"
	"fmt"
)

// ErrCorrupt is matched (errors.Is) by every error that reports a damaged or
// truncated segment: bad magic, checksum mismatch, truncation, lengths that
// disagree with the data, undecodable zstd data.
var ErrCorrupt = errors.New("segment corrupt")

// ErrTruncated reports a segment that ends early. It also matches ErrCorrupt.
var ErrTruncated = fmt.Errorf("%w: truncated", ErrCorrupt)

// ErrBadMagic reports data that does not start with a segment metadata frame,
// for example a plain zstd stream or another file. It also matches ErrCorrupt.
var ErrBadMagic = fmt.Errorf("%w: bad magic", ErrCorrupt)

// ErrChecksum reports a checksum mismatch, of the metadata frame or of the
// uncompressed entries. It also matches ErrCorrupt.
var ErrChecksum = fmt.Errorf("%w: checksum mismatch", ErrCorrupt)

// ErrUnsupportedVersion reports a well-formed segment written in a newer
// format version than this package understands. It does not match
// ErrCorrupt: the segment is most likely fine, the reader is too old.
var ErrUnsupportedVersion = errors.New("segment format version not supported")

// ErrEntryTooLarge reports an entry larger than the configured maximum entry
// size (WithEncoderMaxEntrySize, WithMaxEntrySize).
var ErrEntryTooLarge = errors.New("segment entry too large")

// ErrTooLarge reports a segment whose uncompressed size exceeds the configured
// limit (WithMaxSegmentSize, WithMaxDecoderMemory, WithEncoderMaxSegmentSize).
// Decode checks the declared size before decompressing anything. When the
// data decompresses to more than its metadata declares (a decompression bomb
// or damage), the error matches both ErrTooLarge and ErrCorrupt.
var ErrTooLarge = errors.New("segment too large")

// ErrInvalidEntry reports an entry Encode refuses: an empty entry, an entry
// containing '\n' (it would break the JSONL framing), or an empty batch.
var ErrInvalidEntry = errors.New("invalid segment entry")

// ErrInvalidMeta reports metadata Encode cannot represent: a string longer
// than MaxStringLen, a time outside the int64 Unix-nanosecond range, or
// metadata larger than MaxMetaSize.
var ErrInvalidMeta = errors.New("invalid segment metadata")

// CorruptionError describes where and why a segment failed to decode.
//
// errors.Is(err, ErrCorrupt) is true for every CorruptionError; errors.Is with
// the specific sentinel (ErrTruncated, ErrBadMagic, ErrChecksum, ...) works
// through Unwrap.
type CorruptionError struct {
	// Offset is the byte offset in the segment object where the damage was
	// detected (for zstd data errors: the start of the zstd data).
	Offset int64
	// Reason is a short human-readable description.
	Reason string
	// Err is the underlying cause: a sentinel of this package or an error
	// from the zstd decoder.
	Err error
}

// Error implements error.
func (e *CorruptionError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("segment corrupt at offset %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("segment corrupt at offset %d: %s: %v", e.Offset, e.Reason, e.Err)
}

// Unwrap returns the underlying cause.
func (e *CorruptionError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt; other sentinels are matched
// through Unwrap.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

func corrupt(off int, err error, format string, args ...any) *CorruptionError {
	return &CorruptionError{Offset: int64(off), Reason: fmt.Sprintf(format, args...), Err: err}
}
