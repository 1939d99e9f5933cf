package transcript

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Writing payloads. A writer that takes payloads out of the entries it was handed
// (AppendSegment, or PutSegment of a segment PrepareSegment made) does, for each
// distinct payload and before the segment PUT:
//
//  1. a Stat of the payload's deletion mark: a payload the compaction job has
//     marked may be deleted soon, so the writer does not rely on it and keeps it
//     in its entry (inline);
//  2. a Stat of the payload object, and a create-only PUT when it is missing
//     (the Stat is sent with the mark's, and sent again after it when it found
//     the object: checkPayload).
//
// Then it stores the segment. The compaction job deletes a payload only once its
// mark is MinPayloadDeleteDelay old and no segment listed after that references
// it (payload_gc.go): a mark written after the writer's check is at least that
// delay older than the deletion, and the writer's segment lands within
// payloadWindow of its check, so the deletion's listing sees it. A writer slower
// than that looks at its payloads again after its segment PUT and puts back any
// that is gone.

// found is one payload an entry holds: its span in the entry and its hash.
type found struct {
	entry      int
	start, end int
	hash       PayloadHash
}

// findPayloads returns the payloads of at least threshold bytes that entries hold
// (pi.PayloadSpans), in order, with their hashes.
func findPayloads(entries [][]byte, threshold int) []found {
	var out []found
	for i, e := range entries {
		if len(e) < threshold {
			continue
		}
		for _, sp := range pi.PayloadSpans(e, threshold) {
			out = append(out, found{entry: i, start: sp.Start, end: sp.End, hash: sha256.Sum256(e[sp.Start:sp.End])})
		}
	}
	return out
}

// storedForm returns entries with every payload of fs, except those inline names,
// replaced by its reference, and the references. Entries without one are shared,
// not copied.
func storedForm(entries [][]byte, fs []found, inline map[PayloadHash]bool) ([][]byte, []segment.PayloadRef) {
	out := entries
	var refs []segment.PayloadRef
	for k := 0; k < len(fs); {
		i := fs[k].entry
		e := entries[i]
		var b []byte
		last := 0
		for ; k < len(fs) && fs[k].entry == i; k++ {
			f := fs[k]
			if inline[f.hash] {
				continue
			}
			if b == nil {
				b = make([]byte, 0, len(e))
			}
			b = append(b, e[last:f.start]...)
			refs = append(refs, segment.PayloadRef{Entry: uint32(i), Off: uint32(len(b)), Size: uint64(f.end - f.start), Hash: f.hash})
			b = segment.AppendRefText(b, f.hash)
			last = f.end
		}
		if b == nil {
			continue
		}
		if &out[0] == &entries[0] {
			out = append([][]byte(nil), entries...)
		}
		out[i] = append(b, e[last:]...)
	}
	return out, refs
}

// payloadBytes returns the bytes of each distinct payload of fs.
func payloadBytes(entries [][]byte, fs []found) map[PayloadHash][]byte {
	out := make(map[PayloadHash][]byte, len(fs))
	for _, f := range fs {
		if _, ok := out[f.hash]; !ok {
			out[f.hash] = entries[f.entry][f.start:f.end]
		}
	}
	return out
}

// maxPayloadPuts bounds the payload requests in flight for one segment.
const maxPayloadPuts = 8

// putPayloads stores each distinct payload of ps in namespace ns unless it is
// there already, and returns those the writer must keep inline: the ones a
// deletion mark names (see the top of this file).
func (s *Store) putPayloads(ctx context.Context, ns string, ps map[PayloadHash][]byte) (map[PayloadHash]bool, error) {
	var mu sync.Mutex
	inline := map[PayloadHash]bool{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxPayloadPuts)
	for h, p := range ps {
		g.Go(func() error {
			marked, err := s.checkPayload(gctx, ns, h, p)
			if marked {
				mu.Lock()
				inline[h] = true
				mu.Unlock()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return inline, nil
}

// checkPayload looks at the deletion mark of the payload p of hash h in namespace
// ns and reports whether there is one; when there is none, it makes sure the
// payload object exists (PUT when missing). The mark and the object are looked
// at together, so that a new payload costs one round trip less: a missing
// object is then PUT after the mark was looked at, as the top of this file
// requires, but an object seen to exist may have been seen before the mark was
// (and deleted, its mark removed, in between), so it is looked at again.
func (s *Store) checkPayload(ctx context.Context, ns string, h PayloadHash, p []byte) (bool, error) {
	var objErr error
	looked := make(chan struct{})
	go func() {
		defer close(looked)
		_, objErr = s.cfg.Bucket.Stat(ctx, payloadKey(s.cfg.Prefix, ns, h))
	}()
	_, err := s.cfg.Bucket.Stat(ctx, payloadMarkKey(s.cfg.Prefix, ns, h))
	<-looked
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, bucket.ErrNotFound):
		return false, fmt.Errorf("put payload %x: %w", h, err)
	case objErr == nil:
		return false, s.putPayload(ctx, ns, h, p, true) // seen before the mark: look again
	case !errors.Is(objErr, bucket.ErrNotFound):
		return false, fmt.Errorf("put payload %x: %w", h, objErr)
	}
	return false, s.putPayload(ctx, ns, h, p, false)
}

// putPayload stores the payload p of hash h in namespace ns, create-only; an
// object already there is the same payload (the key is its hash). With stat set
// it looks first and sends nothing when the object exists.
func (s *Store) putPayload(ctx context.Context, ns string, h PayloadHash, p []byte, stat bool) error {
	key := payloadKey(s.cfg.Prefix, ns, h)
	if stat {
		_, err := s.cfg.Bucket.Stat(ctx, key)
		if err == nil {
			return nil
		}
		if !errors.Is(err, bucket.ErrNotFound) {
			return fmt.Errorf("put payload: %w", err)
		}
	}
	data := s.enc.EncodePayload(p)
	err := s.cfg.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)),
		bucket.PutOptions{Checksum: ObjectChecksum(data), ContentType: "application/zstd"})
	if err != nil && !errors.Is(err, bucket.ErrExists) {
		return wrapKey("put payload", key, err)
	}
	return nil
}

// recheckPayloads is the writer's second look (see the top of this file): when
// the segment that references ps landed more than payloadWindow after the checks
// that began at since, it puts back each payload that is gone.
func (s *Store) recheckPayloads(ctx context.Context, ns string, ps map[PayloadHash][]byte, inline map[PayloadHash]bool, since time.Time) error {
	if time.Since(since) < payloadWindow {
		return nil
	}
	for h, p := range ps {
		if !inline[h] {
			if err := s.putPayload(ctx, ns, h, p, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// putExtracted stores the level-0 segment data (entries as written) under
// info.Key with its payloads taken out, when it holds any (storeExtracted): the
// segment then records the checksum of the entries as written, which its key
// names (KeyChecksum). It reports whether it stored the segment; when it did not
// (no payloads, or data that does not decode, which PutSegment stores as given),
// the caller stores data as is.
func (s *Store) putExtracted(ctx context.Context, info SegmentInfo, data []byte) (bool, error) {
	threshold := s.payloadThreshold()
	m, _, err := s.dec.ReadMeta(data)
	if err != nil || m.RawLen < uint64(threshold) || m.Refs != nil {
		return false, nil
	}
	seg, err := s.dec.Decode(data)
	if err != nil {
		return false, nil
	}
	fs := findPayloads(seg.Entries, threshold)
	if len(fs) == 0 {
		return false, nil
	}
	meta := seg.Meta
	meta.ResolvedChecksum, meta.HasResolvedChecksum = seg.Meta.Checksum, true
	return true, s.storeExtracted(ctx, info.Ref.Namespace, seg.Entries, fs, meta, func(meta segment.Meta, stored [][]byte) error {
		if meta.Refs == nil {
			return s.putObject(ctx, info.Key, data) // every payload stays inline
		}
		out, _, err := s.encoder(meta.Level).Encode(meta, stored)
		if err != nil {
			return fmt.Errorf("put segment %s: %w", info.Key, err)
		}
		return s.putObject(ctx, info.Key, out)
	})
}

// appendExtracted is AppendSegment of entries that hold the payloads fs.
func (s *Store) appendExtracted(ctx context.Context, ref TranscriptRef, entries [][]byte, fs []found, w *Writer) (SegmentInfo, error) {
	x, err := s.prepareExtracted(ref, entries, fs, w)
	if err != nil {
		return SegmentInfo{}, err
	}
	return s.putPrepared(ctx, x, w)
}

// extractedSegment is a level-0 segment of entries that hold the payloads fs,
// checked and given its metadata (the writer's sequence number, the checksum of
// the entries as written) and its key's time, but not encoded: its stored form
// depends on which payloads stay inline, known only once they are stored
// (putPrepared).
type extractedSegment struct {
	ref     TranscriptRef
	entries [][]byte
	fs      []found
	meta    segment.Meta
	at      time.Time // the key's time, drawn when prepared
}

// prepareExtracted checks entries, which hold the payloads fs, as PrepareSegment
// does, and draws the segment's sequence number and key time as it does, without
// compressing them: neither they nor their payloads are encoded until
// putPrepared stores them.
func (s *Store) prepareExtracted(ref TranscriptRef, entries [][]byte, fs []found, w *Writer) (extractedSegment, error) {
	ref, meta, err := s.newMeta(ref, entries, nil, w, 0)
	if err != nil {
		return extractedSegment{}, err
	}
	d := xxhash.New()
	for _, e := range entries {
		_, _ = d.Write(e)
		_, _ = d.Write([]byte{'\n'})
	}
	meta.ResolvedChecksum, meta.HasResolvedChecksum = d.Sum64(), true
	return extractedSegment{ref: ref, entries: entries, fs: fs, meta: meta, at: s.cfg.Clock.Next(ref)}, nil
}

// putPrepared stores x: its payloads first, then the segment holding their
// references (storeExtracted), encoded only then.
func (s *Store) putPrepared(ctx context.Context, x extractedSegment, w *Writer) (SegmentInfo, error) {
	var info SegmentInfo
	err := s.storeExtracted(ctx, x.ref.Namespace, x.entries, x.fs, x.meta, func(meta segment.Meta, stored [][]byte) error {
		obj, err := s.encodeAt(x.ref, meta, stored, w, x.at)
		if err != nil {
			return err
		}
		info = obj.Info
		return s.putObject(ctx, obj.Info.Key, obj.Data)
	})
	return info, err
}

// storeExtracted stores the payloads fs of entries in namespace ns (putPayloads),
// then hands put the segment to encode and store: meta (with the resolved
// checksum set) and the entries as stored, with meta.Refs their references; or,
// when every payload must stay inline, the entries as given and meta without
// references. Last it looks at the payloads again if that took long
// (recheckPayloads).
func (s *Store) storeExtracted(ctx context.Context, ns string, entries [][]byte, fs []found, meta segment.Meta,
	put func(meta segment.Meta, stored [][]byte) error) error {
	ps := payloadBytes(entries, fs)
	since := time.Now()
	inline, err := s.putPayloads(ctx, ns, ps)
	if err != nil {
		return err
	}
	stored, refs := storedForm(entries, fs, inline)
	meta.Refs = refs
	if refs == nil {
		meta.ResolvedChecksum, meta.HasResolvedChecksum = 0, false
	}
	if err := put(meta, stored); err != nil {
		return err
	}
	return s.recheckPayloads(ctx, ns, ps, inline, since)
}
