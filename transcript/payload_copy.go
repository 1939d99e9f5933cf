package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Copying references. A fork writes entries as a Stored read returned them, each
// payload still a reference (Entry.Refs), so it reads no payload, hashes none and
// stores none again: its segments reference the payload objects the source's
// segments reference. The segment is level 0 with the copied references and no
// resolved checksum, so its key names the checksum of the JSONL as stored
// (KeyChecksum), as a compaction's does: the writer never saw the entries as
// written. Before the segment PUT the writer checks each distinct payload as
// payload_write.go's writers do:
//
//  1. its deletion mark in the destination namespace (one listing of the marks
//     for the segment): a marked payload may be deleted soon, so the entries that
//     reference it are written with their payloads put back (read from the source
//     namespace), inline;
//  2. a Stat of the payload object in the destination namespace; when it is
//     missing, a copy of the source namespace's object (GET and create-only PUT:
//     the bucket interface has no server-side copy), or, within one namespace,
//     an error wrapping ErrPayloadMissing.
//
// A segment stored more than payloadWindow after those checks is followed by a
// second look at its payload objects, as in payload_write.go: a payload gone by
// then is copied again from the source namespace, or, within one namespace, the
// segment is deleted and the write fails (it cannot put back bytes it never read).
// A payload marked by then stays: the collector lists the segments again before it
// deletes, and sees this one.

// AppendStored writes entries as stored (a Stored read's: Entry.Raw with its
// payload references Entry.Refs) as one or more new level-0 segments of ref,
// written by w, in order, each within segment.DefaultTargetSegmentSize of stored
// JSONL. The references are copied, not the payloads: no payload is read. from
// is the namespace the entries were read from; when it is not ref's, the payload
// objects the entries reference are copied into ref's namespace first. Every
// segment is checked before the first is stored, so a refused entry writes
// nothing; as with AppendSegments, a failed write leaves the segments before it.
// Readers return the entries byte for byte as their writer was handed them.
func (s *Store) AppendStored(ctx context.Context, ref TranscriptRef, from string, entries []Entry, w *Writer) ([]SegmentInfo, error) {
	return s.appendStored(ctx, ref, from, nil, entries, w)
}

// appendStored is AppendStored, relying on chk when it is not nil
// (AppendChecked).
func (s *Store) appendStored(ctx context.Context, ref TranscriptRef, from string, chk *PayloadCheck, entries []Entry, w *Writer) ([]SegmentInfo, error) {
	if len(entries) == 0 {
		return nil, ErrEmptySegment
	}
	raws := make([][]byte, len(entries))
	refs := make([][]segment.PayloadRef, len(entries))
	for i, e := range entries {
		raws[i], refs[i] = e.Raw, e.Refs
	}
	var runs []copyRun
	at := 0
	for _, run := range SplitBatch(raws, 0) {
		r, meta, err := s.newMeta(ref, run, nil, w, 0)
		if err != nil {
			return nil, err
		}
		runs = append(runs, copyRun{ref: r, meta: meta, entries: run, refs: refs[at : at+len(run)]})
		at += len(run)
	}
	infos := make([]SegmentInfo, 0, len(runs))
	for i, run := range runs {
		info, err := s.storeCopied(ctx, from, chk, run, w)
		if err != nil {
			return infos, fmt.Errorf("segment %d of %d: %w", i+1, len(runs), err)
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// copyRun is one segment of entries as stored, checked (newMeta) and not yet
// stored: refs[i] are the references of entries[i].
type copyRun struct {
	ref     TranscriptRef
	meta    segment.Meta
	entries [][]byte
	refs    [][]segment.PayloadRef
}

// appendCopied stores entries as stored, with refs[i] the references of
// entries[i] (payloads of namespace from), as one level-0 segment of ref written
// by w (see AppendStored), relying on chk when it is not nil (AppendChecked).
func (s *Store) appendCopied(ctx context.Context, ref TranscriptRef, from string, chk *PayloadCheck, entries [][]byte, refs [][]segment.PayloadRef, w *Writer) (SegmentInfo, error) {
	if len(refs) != len(entries) {
		return SegmentInfo{}, fmt.Errorf("copy references: %d reference lists for %d entries", len(refs), len(entries))
	}
	r, meta, err := s.newMeta(ref, entries, nil, w, 0)
	if err != nil {
		return SegmentInfo{}, err
	}
	return s.storeCopied(ctx, from, chk, copyRun{ref: r, meta: meta, entries: entries, refs: refs}, w)
}

// storeCopied checks the payloads run references (copying them from namespace
// from when it is another), puts back those marked for deletion, and stores the
// segment (see the top of this file). With chk, a look at the marks of ns taken
// before the entries were read from ns (AppendChecked), it looks at no payload
// object and lists no mark: it relies on chk (payload_check.go).
func (s *Store) storeCopied(ctx context.Context, from string, chk *PayloadCheck, run copyRun, w *Writer) (SegmentInfo, error) {
	from, err := s.payloadNamespace(from)
	if err != nil {
		return SegmentInfo{}, err
	}
	ns := run.ref.Namespace
	sizes := distinctRefs(run.refs)
	since := time.Now()
	var marked map[PayloadHash]bool
	if chk.covers(from, ns) {
		since, marked = chk.at, chk.of(sizes)
	} else if marked, err = s.copyPayloads(ctx, from, ns, sizes, true); err != nil {
		return SegmentInfo{}, err
	}
	entries, refs := run.entries, run.refs
	if len(marked) > 0 {
		if entries, refs, err = s.inlineMarked(ctx, from, entries, refs, marked); err != nil {
			return SegmentInfo{}, err
		}
	}
	meta := run.meta
	meta.Refs = flattenRefs(refs)
	obj, err := s.encodeAs(run.ref, meta, entries, w)
	if err != nil {
		return SegmentInfo{}, err
	}
	if err := s.putObject(ctx, obj.Info.Key, obj.Data); err != nil {
		return SegmentInfo{}, err
	}
	if time.Since(since) < payloadWindow || meta.Refs == nil {
		return obj.Info, nil
	}
	for h := range marked {
		delete(sizes, h)
	}
	if _, err := s.copyPayloads(ctx, from, ns, sizes, false); err != nil {
		_ = s.cfg.Bucket.Delete(ctx, obj.Info.Key) // best effort: it may reference a payload that is gone
		return SegmentInfo{}, fmt.Errorf("copy references to %s: %w", obj.Info.Key, err)
	}
	return obj.Info, nil
}

// payloadNamespace checks that namespace from (empty: the default) is one the
// store sees and returns its normal form.
func (s *Store) payloadNamespace(from string) (string, error) {
	probe, visible, err := s.checkRef(TranscriptRef{Namespace: from, AgentID: "x", SessionID: "x"})
	if err != nil {
		return "", err
	}
	if !visible {
		return "", fmt.Errorf("copy references: %w: %w", errOutside(probe), ErrInvalidRef)
	}
	return probe.Namespace, nil
}

// distinctRefs returns the size of each distinct payload refs reference.
func distinctRefs(refs [][]segment.PayloadRef) map[PayloadHash]uint64 {
	out := map[PayloadHash]uint64{}
	for _, rs := range refs {
		for _, r := range rs {
			out[r.Hash] = r.Size
		}
	}
	return out
}

// copyPayloads makes sure that namespace ns holds each payload of sizes, copying
// it from namespace from when it is another. With marks set it first looks for
// each payload's deletion mark in ns and returns the marked ones (the writer must
// not rely on them); without, it only looks at the objects (the second look: a
// segment that references a marked payload keeps it, as the collector lists the
// segments again before it deletes).
func (s *Store) copyPayloads(ctx context.Context, from, ns string, sizes map[PayloadHash]uint64, marks bool) (map[PayloadHash]bool, error) {
	marked := map[PayloadHash]bool{}
	if len(sizes) == 0 {
		return marked, nil
	}
	if marks {
		var err error
		if marked, err = s.payloadMarks(ctx, ns, sizes); err != nil {
			return nil, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxPayloadStats)
	for h, size := range sizes {
		if !marked[h] {
			g.Go(func() error { return s.copyPayload(gctx, from, ns, h, size) })
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return marked, nil
}

// maxPayloadStats bounds the HEADs of payload objects in flight for one copy of
// references.
const maxPayloadStats = 32

// payloadMarks returns which payloads of sizes (nil: of every payload) namespace
// ns holds a deletion mark of: one listing of the marks (there are few: those of payloads no segment
// references) rather than a HEAD per payload.
func (s *Store) payloadMarks(ctx context.Context, ns string, sizes map[PayloadHash]uint64) (map[PayloadHash]bool, error) {
	marked := map[PayloadHash]bool{}
	p := keyPrefix(s.cfg.Prefix, ns, payloadDir, markDir)
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: p}, func(oi bucket.ObjectInfo) error {
		if h, ok := parseHashName(strings.TrimPrefix(oi.Key, p), markExt); ok {
			if _, ok := sizes[h]; ok || sizes == nil {
				marked[h] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapKey("copy references: list payload marks", p, err)
	}
	return marked, nil
}

// copyPayload makes sure that namespace ns holds the payload object of hash h
// (size bytes), copying namespace from's object when from is another namespace.
func (s *Store) copyPayload(ctx context.Context, from, ns string, h PayloadHash, size uint64) error {
	key := payloadKey(s.cfg.Prefix, ns, h)
	_, err := s.cfg.Bucket.Stat(ctx, key)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, bucket.ErrNotFound):
		return wrapKey("copy payload", key, err)
	case from == ns:
		return fmt.Errorf("copy payload %s: %w", key, ErrPayloadMissing)
	}
	src := payloadKey(s.cfg.Prefix, from, h)
	rc, _, err := s.cfg.Bucket.Get(ctx, src)
	if errors.Is(err, bucket.ErrNotFound) {
		return fmt.Errorf("copy payload %s: %w", src, ErrPayloadMissing)
	}
	if err != nil {
		return wrapKey("copy payload", src, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxPayloadObject(size)))
	if err != nil {
		return wrapKey("copy payload", src, err)
	}
	err = s.cfg.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)),
		bucket.PutOptions{Checksum: ObjectChecksum(data), ContentType: "application/zstd"})
	if err != nil && !errors.Is(err, bucket.ErrExists) {
		return wrapKey("copy payload", key, err)
	}
	return nil
}

// inlineMarked returns entries with the payloads of every entry that references
// a marked payload put back (read from namespace from), those entries then
// holding no reference, and the references of the rest.
func (s *Store) inlineMarked(ctx context.Context, from string, entries [][]byte, refs [][]segment.PayloadRef, marked map[PayloadHash]bool) ([][]byte, [][]segment.PayloadRef, error) {
	entries, refs = append([][]byte(nil), entries...), append([][]segment.PayloadRef(nil), refs...)
	var items []resolveItem
	for i, rs := range refs {
		for _, r := range rs {
			if marked[r.Hash] {
				items = append(items, resolveItem{raw: entries[i], refs: rs, set: func(b []byte) { entries[i], refs[i] = b, nil }})
				break
			}
		}
	}
	if err := s.resolve(ctx, from, items); err != nil {
		return nil, nil, err
	}
	return entries, refs, nil
}
