package segment

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// A payload object (see refs.go) is one standard zstd frame of the payload's
// bytes, with zstd's content checksum: `zstd -dc` prints the payload. These two
// methods share the codecs' zstd instances.

// EncodePayload returns p compressed as one zstd frame, as a payload object is
// stored. The same bytes always give the same object.
func (e *Encoder) EncodePayload(p []byte) []byte {
	return e.zenc.EncodeAll(p, make([]byte, 0, len(p)/2+64))
}

// DecodePayload decompresses the payload object data into dst, whose length is
// the payload size the reference declares: it never writes more than that, and
// data that decompresses to another length is an error wrapping ErrCorrupt. It
// returns dst.
func (d *Decoder) DecodePayload(data, dst []byte) ([]byte, error) {
	if len(dst) == 0 {
		return nil, corrupt(0, nil, "empty payload")
	}
	// Capped at dst's length (WithDecodeAllCapLimit), so a payload in the middle
	// of an entry's buffer never spills over the bytes after it.
	got, err := d.zdec.DecodeAll(data, dst[:0:len(dst)])
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return nil, corrupt(0, nil, "payload decompresses to more than the declared %d bytes", len(dst))
	case err != nil:
		return nil, corrupt(0, err, "decompress payload")
	case len(got) != len(dst):
		return nil, corrupt(0, nil, "payload decompresses to %d bytes, the reference declares %d", len(got), len(dst))
	case &got[0] != &dst[0]:
		return nil, fmt.Errorf("segment: payload decoded outside its buffer: %w", ErrCorrupt)
	}
	return dst, nil
}
