package transcript

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Reading payloads. Every read that returns entries (ReadAll, ReadNew, ReadLean,
// ReadCommitted, ReadSegment, and the Listed readers) puts each payload back in
// place of its reference after the merge (readResolved, readpath.go), so the
// entries are byte for byte as written; it fetches only the payloads of the
// entries it returns, each distinct payload once, decompressed straight into its
// place in the entry and checked against its hash.
// The merge and compaction work on entries as stored and fetch no payload
// (SameEntry compares two versions of an entry without them). A read through a
// Stored store returns entries as stored, with their references (Entry.Refs), and
// fetches no payload: what tree, ls, stats, verify --no-payloads and forks read.

// Stored returns a store whose reads return entries as stored: a payload held by
// reference stays a reference in the entry's bytes (Entry.Refs, LeanResult.Refs
// and Segment.Meta.Refs say where), and no payload object is fetched. Reads that
// need no payload (listings, trees, counts, forks, which copy references) read
// through it. It shares the store's bucket, codecs and clock; closing it is not
// needed.
func (s *Store) Stored() *Store {
	c := *s
	c.ownCodec = false
	c.stored = true
	return &c
}

// resolveItem is one entry to put payloads back into: its stored bytes and
// references, and where the resolved bytes go.
type resolveItem struct {
	raw  []byte
	refs []segment.PayloadRef
	set  func(resolved []byte)
}

// slot is where one payload goes: bytes [off, off+size) of the resolved buffer of
// item.
type slot struct {
	item, off int
	size      uint64
}

// resolve puts back the payloads of items, which belong to namespace ns: each
// item's resolved bytes are laid out in a new buffer, each distinct payload is
// fetched once and decompressed into its first place, checked (size and SHA-256)
// and copied to its other places, then every item's set is called.
func (s *Store) resolve(ctx context.Context, ns string, items []resolveItem) error {
	if len(items) == 0 {
		return nil
	}
	bufs := make([][]byte, len(items))
	slots := map[PayloadHash][]slot{}
	for i, it := range items {
		n := segment.ResolvedLen(len(it.raw), it.refs)
		if n > uint64(s.MaxEntrySize()) {
			return fmt.Errorf("resolve payloads: entry of %d bytes: %w", n, segment.ErrEntryTooLarge)
		}
		b := make([]byte, 0, n)
		last := 0
		for _, r := range it.refs {
			b = append(b, it.raw[last:r.Off]...)
			slots[r.Hash] = append(slots[r.Hash], slot{item: i, off: len(b), size: r.Size})
			b = b[:len(b)+int(r.Size)]
			last = int(r.Off) + segment.RefLen
		}
		bufs[i] = append(b, it.raw[last:]...)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.readLimit(len(slots)))
	// The compressed objects are read into buffers the fetches share, one per
	// fetch in flight: garbage of the size of every payload read would raise the
	// peak memory of a read above that of the same entries stored inline.
	var scratch sync.Pool
	for h, places := range slots {
		g.Go(func() error {
			first := places[0]
			dst := bufs[first.item][first.off : first.off+int(first.size)]
			buf, _ := scratch.Get().(*[]byte)
			if buf == nil {
				buf = new([]byte)
			}
			defer scratch.Put(buf)
			if err := s.fetchPayload(gctx, ns, h, dst, buf); err != nil {
				return err
			}
			for _, p := range places[1:] {
				if p.size != first.size {
					return errSizesDiffer(h, first.size, p.size)
				}
				copy(bufs[p.item][p.off:], dst)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, it := range items {
		it.set(bufs[i])
	}
	return nil
}

// fetchPayload reads the payload of hash h in namespace ns into dst, whose length
// is the size its reference declares, and checks it. The compressed object is
// read into *scratch (grown when too small, and left there for the next fetch).
// A missing object gives an error wrapping ErrPayloadMissing; one that does not
// decompress to dst's length or to that hash, segment.ErrCorrupt.
func (s *Store) fetchPayload(ctx context.Context, ns string, h PayloadHash, dst []byte, scratch *[]byte) error {
	key := payloadKey(s.cfg.Prefix, ns, h)
	if s.gets != nil {
		select {
		case s.gets <- struct{}{}:
			defer func() { <-s.gets }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rc, oi, err := s.cfg.Bucket.Get(ctx, key)
	if errors.Is(err, bucket.ErrNotFound) {
		return fmt.Errorf("read payload %s: %w", key, ErrPayloadMissing)
	}
	if err != nil {
		return wrapKey("read payload", key, err)
	}
	defer rc.Close()
	data, err := readObject(rc, oi.Size, maxPayloadObject(uint64(len(dst))), scratch)
	if err != nil {
		return wrapKey("read payload", key, err)
	}
	if _, err := s.dec.DecodePayload(data, dst); err != nil {
		return fmt.Errorf("read payload %s: %w", key, err)
	}
	if sha256.Sum256(dst) != h {
		return fmt.Errorf("read payload %s: %w: its bytes have another SHA-256", key, segment.ErrCorrupt)
	}
	return nil
}

// maxPayloadObject bounds the stored size of the object of a payload of size
// bytes: a frame of incompressible bytes is a little larger than they are.
func maxPayloadObject(size uint64) int64 {
	return int64(size) + int64(size)/64 + 1<<10
}

// readObject reads the object body rc, of size bytes as the bucket reports it
// (0 or less: not known), at most limit bytes, into *scratch, which it grows when
// too small. A body longer than limit is cut there (the decompression then
// fails).
func readObject(rc io.Reader, size, limit int64, scratch *[]byte) ([]byte, error) {
	if size <= 0 || size > limit {
		return io.ReadAll(io.LimitReader(rc, limit))
	}
	if int64(cap(*scratch)) < size {
		*scratch = make([]byte, size)
	}
	data := (*scratch)[:size]
	if _, err := io.ReadFull(rc, data); err != nil {
		return nil, err
	}
	return data, nil
}

// resolveSegment puts the payloads back into every entry of seg, of namespace ns
// (unless s is Stored); its metadata then lists no references.
func (s *Store) resolveSegment(ctx context.Context, ns string, seg *segment.Segment) error {
	if s.stored || seg.Meta.Refs == nil {
		return nil
	}
	var items []resolveItem
	for i := range seg.Entries {
		if refs := segment.EntryRefs(seg.Meta.Refs, uint32(i)); len(refs) > 0 {
			items = append(items, resolveItem{raw: seg.Entries[i], refs: refs, set: func(b []byte) { seg.Entries[i] = b }})
		}
	}
	if err := s.resolve(ctx, ns, items); err != nil {
		return err
	}
	seg.Meta.Refs = nil
	return nil
}

// CheckPayload checks the payload of hash h, size bytes, of namespace: with fetch
// set it reads it, and checks its size and SHA-256 (errors wrap segment.ErrCorrupt);
// without, it only asks the bucket whether the object exists (Stat: no payload
// byte is read). A missing object gives an error wrapping ErrPayloadMissing.
func (s *Store) CheckPayload(ctx context.Context, namespace string, h PayloadHash, size uint64, fetch bool) error {
	probe, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: "x", SessionID: "x"})
	if err != nil {
		return err
	}
	if !visible {
		return fmt.Errorf("check payload: %w", errOutside(probe))
	}
	if !fetch {
		key := payloadKey(s.cfg.Prefix, probe.Namespace, h)
		_, err := s.cfg.Bucket.Stat(ctx, key)
		if errors.Is(err, bucket.ErrNotFound) {
			return fmt.Errorf("check payload %s: %w", key, ErrPayloadMissing)
		}
		if err != nil {
			return wrapKey("check payload", key, err)
		}
		return nil
	}
	if size == 0 || size > uint64(s.MaxEntrySize()) {
		return fmt.Errorf("check payload %x: %w: size %d out of range", h, segment.ErrCorrupt, size)
	}
	return s.fetchPayload(ctx, probe.Namespace, h, make([]byte, size), new([]byte))
}

// PayloadObjects returns the stored size of every payload object of namespace, by
// hash (deletion marks left out).
func (s *Store) PayloadObjects(ctx context.Context, namespace string) (map[PayloadHash]int64, error) {
	probe, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: "x", SessionID: "x"})
	if err != nil || !visible {
		return nil, err
	}
	pl, err := s.listPayloads(ctx, probe.Namespace)
	if err != nil {
		return nil, err
	}
	out := make(map[PayloadHash]int64, len(pl.objects))
	for h, oi := range pl.objects {
		out[h] = oi.Size
	}
	return out, nil
}

// errSizesDiffer is the corruption of payload h referenced with two sizes.
func errSizesDiffer(h PayloadHash, a, b uint64) error {
	return fmt.Errorf("payload %x: %w: referenced with sizes %d and %d", h, segment.ErrCorrupt, a, b)
}
