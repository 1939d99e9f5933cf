package transcript

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Garbage collection of payload objects. A payload object no segment of its
// namespace references any more (its sessions were deleted, or rewritten without
// it) is deleted in two steps, as superseded segments are:
//
//  1. a run that finds it unreferenced stores its deletion mark,
//     {namespace}/payloads/gc/{sha256 hex}.mark.json (a writer that meets the mark
//     keeps that payload inline: payload_write.go);
//  2. a later run, once the mark is old enough on the bucket's clock (the delete
//     delay, at least MinPayloadDeleteDelay), lists the namespace's segments again
//     and reads the metadata of those it had not read: the payload is deleted only
//     if none references it then; otherwise its mark is removed.
//
// References are read from the segments' metadata frames (segment.Meta.Refs), one
// ranged GET per segment: no entry and no payload is fetched.

// PayloadGCOptions configures CollectPayloads.
type PayloadGCOptions struct {
	// DeleteDelay is how long a mark stays before its payload is deleted: zero means
	// DefaultDeleteDelay; below MinPayloadDeleteDelay (DeleteAtOnce included) it is
	// MinPayloadDeleteDelay.
	DeleteDelay time.Duration
	// DryRun counts what would be marked and deleted, and changes nothing.
	DryRun bool
}

// PayloadGCResult reports what CollectPayloads did (or would do) in one namespace.
type PayloadGCResult struct {
	// Payloads and Bytes count the payload objects listed and their stored size.
	Payloads int
	Bytes    int64
	// Segments counts the segments whose metadata was read.
	Segments int
	// Referenced counts the distinct payloads some segment references.
	Referenced int
	// Marked counts payloads marked for deletion by this run.
	Marked int
	// Pending counts marked payloads whose delay has not passed.
	Pending int
	// Unmarked counts marks removed because their payload is referenced again (or
	// is gone).
	Unmarked int
	// Deleted and DeletedBytes count the payload objects deleted.
	Deleted      int
	DeletedBytes int64
	// Missing counts payloads segments reference that the namespace lacks (verify
	// reports them).
	Missing int
}

// payloadListing is what a listing of a namespace's payloads found.
type payloadListing struct {
	objects map[PayloadHash]bucket.ObjectInfo
	marks   map[PayloadHash]bucket.ObjectInfo
}

// listPayloads lists the payload objects and marks of namespace ns.
func (s *Store) listPayloads(ctx context.Context, ns string) (payloadListing, error) {
	pl := payloadListing{objects: map[PayloadHash]bucket.ObjectInfo{}, marks: map[PayloadHash]bucket.ObjectInfo{}}
	p := keyPrefix(s.cfg.Prefix, ns, payloadDir)
	mp := p + markDir + "/"
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: p}, func(oi bucket.ObjectInfo) error {
		if rest, ok := strings.CutPrefix(oi.Key, mp); ok {
			if h, ok := parseHashName(rest, markExt); ok {
				pl.marks[h] = oi
			}
		} else if h, ok := parseHashName(strings.TrimPrefix(oi.Key, p), payloadExt); ok {
			pl.objects[h] = oi
		}
		return nil
	})
	if err != nil {
		return pl, wrapKey("list payloads", p, err)
	}
	return pl, nil
}

// PayloadRefs maps each payload referenced in a namespace to how many references
// to it its segments hold.
type PayloadRefs map[PayloadHash]int

// ReferencedPayloads lists every segment of namespace (all agents) and reads the
// metadata of each whose key is not in seen (which it then adds), adding their
// references to refs. A segment gone since the listing is skipped; one whose
// metadata does not verify is an error wrapping ErrCompactInput (its references
// cannot be known, so nothing may be deleted). So is a listing that meets an
// object named like an agent's, a session's or a session folder's key prefix
// (an S3 tool's copy of a file to acme/coder/s1): some servers (MinIO) list
// nothing under such a folder, so the segments there, and what they reference,
// may be missing from the listing; the error wraps ErrHiddenSegments too.
func (s *Store) ReferencedPayloads(ctx context.Context, namespace string, refs PayloadRefs, seen map[string]bool) (int, error) {
	var infos []SegmentInfo
	var hiding []string
	err := s.listSessionSegments(ctx, namespace, "", func(_ TranscriptRef, got []SegmentInfo, _ bool) error {
		for _, in := range got {
			if !seen[in.Key] {
				infos = append(infos, in)
			}
		}
		return nil
	}, func(key string) { hiding = append(hiding, key) })
	if err != nil {
		return 0, err
	}
	if len(hiding) > 0 {
		return 0, fmt.Errorf("%w: %w", ErrCompactInput, hidingError(hiding))
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.readLimit(len(infos)))
	for _, in := range infos {
		g.Go(func() error {
			m, err := s.ReadSegmentMeta(gctx, in.Key)
			switch {
			case errors.Is(err, bucket.ErrNotFound):
				return nil
			case err != nil:
				return fmt.Errorf("%w: %w", ErrCompactInput, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range m.Refs {
				refs[r.Hash]++
			}
			return nil
		})
	}
	err = g.Wait()
	for _, in := range infos {
		seen[in.Key] = true
	}
	return len(infos), err
}

// CollectPayloads deletes the payload objects of namespace that no segment
// references, in the two steps described at the top of payload_gc.go: it marks
// those it finds unreferenced, and deletes those whose mark is old enough and that
// no segment references when it looks again. It reads no segment when the
// namespace holds no payload object.
func (s *Store) CollectPayloads(ctx context.Context, namespace string, opts PayloadGCOptions) (PayloadGCResult, error) {
	var res PayloadGCResult
	probe, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: "x", SessionID: "x"})
	if err != nil || !visible {
		return res, err
	}
	ns := probe.Namespace
	pl, err := s.listPayloads(ctx, ns)
	if err != nil || len(pl.objects) == 0 && len(pl.marks) == 0 {
		return res, err
	}
	for _, oi := range pl.objects {
		res.Payloads++
		res.Bytes += oi.Size
	}
	refs, seen := PayloadRefs{}, map[string]bool{}
	if res.Segments, err = s.ReferencedPayloads(ctx, ns, refs, seen); err != nil {
		return res, err
	}
	res.Referenced = len(refs)
	for h := range refs {
		if _, ok := pl.objects[h]; !ok {
			res.Missing++
		}
	}
	now, err := s.bucketNow(ctx)
	if err != nil {
		return res, err
	}
	delay := s.payloadDelay(opts.DeleteDelay)
	var due []PayloadHash
	var unmark []string
	for h, oi := range pl.objects {
		mark, marked := pl.marks[h]
		switch {
		case refs[h] > 0 && marked:
			unmark = append(unmark, mark.Key)
		case refs[h] > 0:
		case !marked:
			res.Marked++
			if !opts.DryRun {
				if err := s.putPayloadMark(ctx, ns, h, oi.Size); err != nil {
					return res, err
				}
			}
		case delay > 0 && now.Sub(mark.ModTime) < delay:
			res.Pending++
		default:
			due = append(due, h)
		}
	}
	for h, mark := range pl.marks {
		if _, ok := pl.objects[h]; !ok {
			unmark = append(unmark, mark.Key) // its payload is gone
		}
	}
	deleted, err := s.deleteDuePayloads(ctx, ns, due, pl, refs, seen, opts.DryRun, &unmark)
	if err != nil {
		return res, err
	}
	for _, h := range deleted {
		res.Deleted++
		res.DeletedBytes += pl.objects[h].Size
	}
	res.Unmarked = len(unmark)
	if opts.DryRun {
		return res, nil
	}
	if err := s.deleteKeys(ctx, unmark); err != nil {
		return res, fmt.Errorf("delete payload marks: %w", err)
	}
	return res, nil
}

// deleteDuePayloads deletes the payloads due (marked long enough, unreferenced at
// the first look) that no segment references at a second look, taken now: the
// segments listed since the first are read too. A payload referenced again keeps
// its object and loses its mark (added to unmark). It returns the deleted ones.
func (s *Store) deleteDuePayloads(ctx context.Context, ns string, due []PayloadHash, pl payloadListing, refs PayloadRefs,
	seen map[string]bool, dryRun bool, unmark *[]string) ([]PayloadHash, error) {
	if len(due) == 0 {
		return nil, nil
	}
	if _, err := s.ReferencedPayloads(ctx, ns, refs, seen); err != nil {
		return nil, err
	}
	var gone []PayloadHash
	var keys []string
	for _, h := range due {
		if refs[h] > 0 {
			*unmark = append(*unmark, pl.marks[h].Key)
			continue
		}
		gone = append(gone, h)
		keys = append(keys, pl.objects[h].Key)
		*unmark = append(*unmark, pl.marks[h].Key) // after its payload: see deleteKeys' order
	}
	if dryRun {
		return gone, nil
	}
	if err := s.deleteKeys(ctx, keys); err != nil {
		return nil, fmt.Errorf("delete payloads: %w", err)
	}
	return gone, nil
}

// payloadDelay returns the delay after which a marked payload may go: d (zero:
// DefaultDeleteDelay), and never less than the store's floor.
func (s *Store) payloadDelay(d time.Duration) time.Duration {
	if d == 0 {
		d = DefaultDeleteDelay
	}
	return max(d, s.payloadFloor)
}

// putPayloadMark stores the deletion mark of the payload h of namespace ns; a mark
// already there keeps its age.
func (s *Store) putPayloadMark(ctx context.Context, ns string, h PayloadHash, size int64) error {
	key := payloadMarkKey(s.cfg.Prefix, ns, h)
	data := fmt.Appendf(nil, "{\"payload\":%q,\"size\":%d,\"markedAt\":%q}\n",
		hex.EncodeToString(h[:]), size, s.cfg.Now().UTC().Format(time.RFC3339Nano))
	err := s.cfg.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)),
		bucket.PutOptions{Checksum: ObjectChecksum(data), ContentType: "application/json"})
	if err != nil && !errors.Is(err, bucket.ErrExists) {
		return wrapKey("mark payload", key, err)
	}
	return nil
}
