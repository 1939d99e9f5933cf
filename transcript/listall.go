package transcript

import (
	"context"
	"errors"
	"fmt"

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
	probe := TranscriptRef{Namespace: namespace, AgentID: agent, SessionID: "x"}
	if agent == "" {
		probe.AgentID = "x"
	}
	ref, visible, err := s.checkRef(probe)
	if err != nil || !visible {
		return err
	}
	prefix := keyPrefix(s.cfg.Prefix, ref.Namespace)
	if agent != "" {
		prefix = keyPrefix(s.cfg.Prefix, ref.Namespace, ref.AgentID)
	}
	var cur []SegmentInfo
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		infos := cur
		cur = nil
		return fn(infos[0].Ref, infos)
	}
	err = s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: prefix}, func(oi bucket.ObjectInfo) error {
		info, err := ParseKey(s.cfg.Prefix, oi.Key)
		if err != nil {
			return nil // a mark, a head object or a stray file: not a segment
		}
		info.Size = oi.Size
		if len(cur) > 0 && cur[0].Ref != info.Ref {
			if err := flush(); err != nil {
				return err
			}
		}
		cur = append(cur, info)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list segments under %s: %w", prefix, err)
	}
	return flush()
}

// ReadNewListed is ReadNew with the session's listing already in hand (from
// ListSessionSegments), so that it sends no LIST. If a listed segment vanished
// before it was fetched, it falls back to ReadNew, which lists again.
func (s *Store) ReadNewListed(ctx context.Context, ref TranscriptRef, infos []SegmentInfo, have SegmentSet) (*Increment, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return nil, err
	}
	if !visible || len(infos) == 0 {
		return nil, fmt.Errorf("read %s: %w", ref, ErrNotFound)
	}
	for _, in := range infos {
		if in.Ref.Norm() != ref {
			return nil, fmt.Errorf("read %s: %w: listing holds %s", ref, ErrInvalidRef, in.Key)
		}
	}
	inc, err := s.readNew(ctx, infos, have)
	if errors.Is(err, ErrNotFound) {
		return s.ReadNew(ctx, ref, have)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref, err)
	}
	return inc, nil
}
