// Package segment implements the immutable segment format of the transcript
// store: encoding a batch of raw JSONL entries into one object, and decoding
// and verifying such an object.
//
// A segment is a valid zstd stream. `zstd -dc SEGMENT` prints its entries as
// JSONL, one raw entry per line, byte for byte as they were given to Encode.
// The segment's metadata (Meta) travels first, in a zstd skippable frame that
// standard decoders ignore, so a reader can get it from a prefix of the object
// (ReadMeta). The binary layout, byte order, checksum scope and versioning
// rules are documented in FORMAT.md next to this file.
//
// The package does no I/O of its own: it works on []byte, or reads from an
// io.Reader the caller hands to DecodeFrom. It knows nothing
// about buckets or keys; object naming (ending in Ext, ".jsonl.zst") belongs
// to the transcript package.
//
// A batch larger than the encoder's frame size (WithFrameSize) is written as
// several zstd frames cut at entry boundaries, compressed in parallel; Decode
// decompresses such frames in parallel, and falls back to decoding the data as
// one stream whenever that does not succeed. DecodeFrom decodes each frame as
// soon as it has arrived from a reader, overlapping the download. Either way
// each decoded frame is cut into entries by its worker and hashed as soon as
// the frames before it are, so the checks overlap the decoding too; whatever a
// frame cannot answer alone is left to one pass over the whole JSONL, so the
// results and errors are the same as for one stream.
//
// Decoding never panics on bad input. Damage is reported with typed errors:
// every corruption or truncation error satisfies errors.Is(err, ErrCorrupt)
// and can be inspected with errors.As(err, **CorruptionError); limits
// (ErrEntryTooLarge, ErrTooLarge) and newer formats (ErrUnsupportedVersion)
// have their own sentinels.
//
// Encoder and Decoder are safe for concurrent use and are meant to be created
// once and shared: each holds a zstd encoder or decoder and its buffers.
//
// A compacted segment's metadata describes every entry (its origin, and an
// index of lengths, ids and parent ids). Decode returns them as slices
// (Meta.Origins, Meta.Index); a Decoder's PackedIndex view leaves them as the
// metadata stores them, to be read one record at a time (Meta.OriginAt,
// Meta.IndexAt), for a reader of large sessions that keeps only part of them.
package segment
