package repository

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// HeadName is the object name of a strict session's head, under the session's key
// prefix: {prefix}/{namespace}/{agentId}/{sessionId}/HEAD.json. It is not a segment
// key, so segment listings skip it; deleting the session removes it.
// Compact (package transcript) skips sessions that have one.
const HeadName = transcript.HeadName

// headFormat is the format version of the head object.
const headFormat = 1

// head is the content of a strict session's head object:
//
//	{"format":1,"version":7,"head":"a1b2c3d4","segments":["L0/2026...zst", ...]}
//
// version counts commits (so two heads never have the same bytes), head is the id
// of the head entry ("" for none), and segments names the committed segments, in
// commit order, relative to the session's key prefix.
type head struct {
	Format   int      `json:"format"`
	Version  uint64   `json:"version"`
	Head     string   `json:"head"`
	Segments []string `json:"segments"`
}

// headState is a head with the ETag it was read or written with.
type headState struct {
	head
	etag string
}

// commit returns the head after committing seg with new head entry id.
func (h head) commit(seg, headID string) head {
	return head{
		Format:   headFormat,
		Version:  h.Version + 1,
		Head:     headID,
		Segments: append(h.Segments[:len(h.Segments):len(h.Segments)], seg),
	}
}

// names reports whether the head commits the segment with relative name rel.
func (h head) names(rel string) bool {
	for _, s := range h.Segments {
		if s == rel {
			return true
		}
	}
	return false
}

func parseHead(data []byte) (head, error) {
	var h head
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&h); err != nil {
		return head{}, fmt.Errorf("%w: parse head: %w", ErrHeadMismatch, err)
	}
	if h.Format != headFormat {
		return head{}, fmt.Errorf("%w: head format %d, want %d", ErrHeadMismatch, h.Format, headFormat)
	}
	return h, nil
}

// headKey is the key of the head object of the session.
func (s *Session) headKey() string { return s.prefix + HeadName }

// relName returns a segment key relative to the session prefix.
func (s *Session) relName(key string) string { return strings.TrimPrefix(key, s.prefix) }

// readHead reads the head object; ok is false when there is none.
func (r *Repository) readHead(ctx context.Context, key string) (hs headState, ok bool, err error) {
	data, etag, err := r.bucket.GetWithETag(ctx, key)
	if errors.Is(err, bucket.ErrNotFound) {
		return headState{}, false, nil
	}
	if err != nil {
		return headState{}, false, fmt.Errorf("read head: %w", err)
	}
	h, err := parseHead(data)
	if err != nil {
		return headState{}, false, err
	}
	return headState{head: h, etag: etag}, true, nil
}

// writeHead writes h with cond and returns the new state. A failed condition
// wraps bucket.ErrPreconditionFailed.
func (r *Repository) writeHead(ctx context.Context, key string, h head, cond bucket.Cond) (headState, error) {
	data, err := json.Marshal(h)
	if err != nil {
		return headState{}, fmt.Errorf("encode head: %w", err)
	}
	etag, err := r.bucket.PutIf(ctx, key, bytes.NewReader(data), int64(len(data)), cond)
	if err != nil {
		return headState{}, fmt.Errorf("write head: %w", err)
	}
	return headState{head: h, etag: etag}, nil
}
