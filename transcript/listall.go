package transcript

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ListSessionSegments lists, with one recursive listing, the segments of every
// session of agent in namespace (every agent when agent is ""; the default
// namespace when namespace is ""), and calls fn once per session with its segments
// in key order, as soon as the listing has moved past the session: a caller can
// start reading a session while the rest is still being listed. Sessions come in
// key order; sessions without segments are not reported. An error from fn stops
// the listing and is returned as is. A store bound to another namespace sees
// nothing.
func (s *Store) ListSessionSegments(ctx context.Context, namespace, agent string, fn func(ref TranscriptRef, infos []SegmentInfo) error) error {
	return s.listSessionSegments(ctx, namespace, agent, func(ref TranscriptRef, infos []SegmentInfo, _ bool) error {
		return fn(ref, infos)
	}, nil)
}

// listSessionSegments is ListSessionSegments that also tells fn whether the
// listing showed the session's strict head object (HeadName). A session's keys
// are contiguous in the listing, so the head is the last one listed before the
// session's first segment (HEAD.json sorts before L…/) or before its flush.
// hiding, when not nil, is called with every key listed that is named like a
// folder of the layout (hidesInNamespace): an object that hides what lies
// under that folder from some servers' listings, so that the listing may lack
// segments.
func (s *Store) listSessionSegments(ctx context.Context, namespace, agent string, fn func(ref TranscriptRef, infos []SegmentInfo, head bool) error,
	hiding func(key string)) error {
	nsPrefix, prefix, visible, err := s.namespaceListing(namespace, agent)
	if err != nil || !visible {
		return err
	}
	var cur []SegmentInfo
	headOf, curHead := "", false // the session prefix of the last head listed; whether cur's was
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		infos, head := cur, curHead || headOf == sessionPrefix(s.cfg.Prefix, cur[0].Ref)
		cur = nil
		return fn(infos[0].Ref, infos, head)
	}
	err = s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: prefix}, func(oi bucket.ObjectInfo) error {
		info, err := ParseKey(s.cfg.Prefix, oi.Key)
		if err != nil {
			if k, ok := strings.CutSuffix(oi.Key, "/"+HeadName); ok {
				headOf = k + "/"
			} else if hiding != nil && hidesInNamespace(strings.TrimPrefix(oi.Key, nsPrefix)) {
				hiding(oi.Key)
			}
			return nil // a mark, a head object or a stray file: not a segment
		}
		info.Size = oi.Size
		if len(cur) > 0 && cur[0].Ref != info.Ref {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(cur) == 0 {
			curHead = headOf == sessionPrefix(s.cfg.Prefix, info.Ref)
		}
		cur = append(cur, info)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list segments under %s: %w", prefix, err)
	}
	return flush()
}

// readNewListed is ReadNew with the session's listing already in hand (from
// ListSessionSegments), so that it sends no LIST. If a listed segment vanished
// before it was fetched, it falls back to ReadNew, which lists again.
func (s *Store) readNewListed(ctx context.Context, ref TranscriptRef, infos []SegmentInfo, have SegmentSet) (*Increment, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return nil, err
	}
	if !visible || len(infos) == 0 {
		return nil, fmt.Errorf("read %s: %w", ref, bucket.ErrNotFound)
	}
	for _, in := range infos {
		if in.Ref.Norm() != ref {
			return nil, fmt.Errorf("read %s: %w: listing holds %s", ref, ErrInvalidRef, in.Key)
		}
	}
	inc, err := readResolved(ctx, s, ref, func() (*Increment, error) {
		inc, err := s.readNew(ctx, infos, have)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		return inc, nil
	})
	if errors.Is(err, bucket.ErrNotFound) && !errors.Is(err, ErrPayloadMissing) {
		return s.ReadNew(ctx, ref, have)
	}
	return inc, err
}

// Listed reads one session whose listing is already in hand (from
// ListSessionSegments): its first ReadNew sends no LIST, later ones list as usual.
// It is a sessiontree remote (ReadAll, ReadNew). It is safe for concurrent use.
type Listed struct {
	*Store
	ref   TranscriptRef
	mu    sync.Mutex
	infos []SegmentInfo
	ahead *fetchedAhead // the listed segments, fetched ahead of the read
	// head: the listing showed the session's strict head object (HeadListed).
	head bool
}

// fetchedAhead is the result of fetching a listed session's segments ahead of
// its read (ForEachListedSessionAhead); done is closed when it is set.
type fetchedAhead struct {
	done    chan struct{}
	segs    []*segment.Segment
	corrupt []CorruptSegment
	err     error
}

// Listed returns the reader of ref whose segments are infos (as listed).
func (s *Store) Listed(ref TranscriptRef, infos []SegmentInfo) *Listed {
	return &Listed{Store: s, ref: ref.Norm(), infos: infos}
}

// Ref returns the session the listing is of.
func (l *Listed) Ref() TranscriptRef { return l.ref }

// HeadListed reports whether the listing showed the session's strict head
// object (HeadName), as ListSegmentsHead does: only the readers of
// ForEachListedSession know it; one made by Store.Listed says false. The
// reads of a Listed read the segments listed, whatever the session is; a reader
// of a strict session reads it by its head (ReadHead, ReadLeanCommitted).
func (l *Listed) HeadListed() bool { return l.head }

// ReadNew reads what have lacks, from the listing in hand the first time it is
// asked about the listed session.
func (l *Listed) ReadNew(ctx context.Context, ref TranscriptRef, have SegmentSet) (*Increment, error) {
	l.mu.Lock()
	infos := l.infos
	if ref.Norm() == l.ref {
		l.infos = nil
	}
	l.mu.Unlock()
	if infos == nil || ref.Norm() != l.ref {
		return l.Store.ReadNew(ctx, ref, have)
	}
	return l.Store.readNewListed(ctx, ref, infos, have)
}

// ForEachListedSession lists the sessions of agent in namespace (every agent when
// agent is "") with one recursive listing (ListSessionSegments) and runs fn for each
// session, parallel at a time, with a reader that uses the listing: reads start
// while the listing goes on and send no LIST of their own, so a whole namespace is
// read with one listing and parallel × Config.ReadConcurrency GETs in flight,
// shared by the sessions being read. The first error stops the run and is returned.
func (s *Store) ForEachListedSession(ctx context.Context, namespace, agent string, parallel int, fn func(ctx context.Context, l *Listed) error) error {
	return s.ForEachListedSessionAhead(ctx, namespace, agent, parallel, nil, fn)
}

// ForEachListedSessionAhead is ForEachListedSession that also fetches ahead: the
// listed sessions for which prefetch (when not nil) returns true have their
// segments fetched and verified as soon as the listing has passed them, up to
// parallel + 1 sessions ahead of those fn runs on, with the same GET slots; the
// Listed's first ReadLean then takes them instead of fetching. A session's CPU
// work (decoding, merging, writing) thus leaves no GET slot idle, and at most
// 2 × parallel + 1 sessions are held at once. Prefetch suits a caller that
// reads every listed session whole (a restore into empty directories); a
// session fetched ahead and then not read lean costs its GETs for nothing. A
// strict session (Listed.HeadListed) is not fetched ahead: its reader reads the
// segments its head commits, not those listed.
func (s *Store) ForEachListedSessionAhead(ctx context.Context, namespace, agent string, parallel int, prefetch func(ref TranscriptRef) bool, fn func(ctx context.Context, l *Listed) error) error {
	parallel = max(1, parallel)
	// The sessions' reads share parallel × Config.ReadConcurrency GET slots: a
	// session fetches all its segments at once as slots free up, so that while
	// some sessions decode and write, the others keep every slot busy (instead of
	// each session fetching in rounds of its own and leaving slots idle).
	shared := *s
	shared.gets = make(chan struct{}, parallel*s.cfg.ReadConcurrency)
	lean := shared.PackedReads() // what a session's lean read fetches, with the same GET slots
	g, gctx := errgroup.WithContext(ctx)
	queue := 0
	if prefetch != nil {
		queue = parallel // sessions fetched ahead wait here for a worker
	}
	work := make(chan *Listed, queue)
	g.Go(func() error {
		defer close(work)
		return s.listSessionSegments(gctx, namespace, agent, func(ref TranscriptRef, infos []SegmentInfo, head bool) error {
			l := shared.Listed(ref, infos)
			l.head = head
			if prefetch != nil && !head && prefetch(l.ref) {
				a := &fetchedAhead{done: make(chan struct{})}
				l.ahead = a
				// Its error is the session's, reported by its read, not the run's.
				g.Go(func() error {
					defer close(a.done)
					a.segs, a.corrupt, a.err = lean.fetchSession(gctx, infos)
					return nil
				})
			}
			select {
			case work <- l:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		}, nil)
	})
	for range parallel {
		g.Go(func() error {
			for l := range work {
				if err := fn(gctx, l); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// namespaceListing checks namespace and agent ("" for every agent) against the
// store and returns the key prefix of the namespace and the prefix to list (the
// agent's, when one is given). visible is false when the store is bound to
// another namespace: it then sees nothing there.
func (s *Store) namespaceListing(namespace, agent string) (nsPrefix, listPrefix string, visible bool, err error) {
	probe := TranscriptRef{Namespace: namespace, AgentID: agent, SessionID: "x"}
	if agent == "" {
		probe.AgentID = "x"
	}
	ref, visible, err := s.checkRef(probe)
	if err != nil || !visible {
		return "", "", visible, err
	}
	nsPrefix = keyPrefix(s.cfg.Prefix, ref.Namespace)
	listPrefix = nsPrefix
	if agent != "" {
		listPrefix = keyPrefix(s.cfg.Prefix, ref.Namespace, ref.AgentID)
	}
	return nsPrefix, listPrefix, true, nil
}
