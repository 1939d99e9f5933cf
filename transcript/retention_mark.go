package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// RetentionMarkName is the object name, under a session's key prefix, of the
// session's retention mark: {prefix}/{namespace}/{agentId}/{sessionId}/gc/retention.mark.json.
// Retain writes it when a policy selects the session and deletes the session once
// the mark is a delete delay old, if no segment was written to the session since.
// It lies under the deletion marks' element, so only the compactor role may write it,
// and it is not a segment key, so readers skip it.
const RetentionMarkName = markDir + "/retention" + markExt

// retentionMarkFormat is the format version of a retention mark.
const retentionMarkFormat = 1

// maxRetentionMark bounds the bytes read of a retention mark (it names every
// segment of its session: about 90 bytes each).
const maxRetentionMark = 64 << 20

// retentionMark is the content of a retention mark: one decision to delete a
// session. Like a deletion mark it is a schedule, never a proof: its age is the
// LastModified of the mark object on the bucket's clock (MarkedAt and LastUpdate
// are for people), and at delete time the session is listed again and kept if it
// holds a segment the mark does not name and that is not a compaction of segments
// it names.
type retentionMark struct {
	Format int `json:"format"`
	// Reason says which policy selected the session, and why.
	Reason string `json:"reason"`
	// LastUpdate is the session's last update when it was marked.
	LastUpdate time.Time `json:"lastUpdate"`
	// MarkedAt is the marking job's time (informational).
	MarkedAt time.Time `json:"markedAt"`
	// Segments names the session's segments when it was marked, relative to the
	// session (as compacted segments name their inputs).
	Segments []string `json:"segments"`
	// modTime is the mark object's LastModified: its age.
	modTime time.Time
}

// retentionMarkKey returns the key of ref's retention mark.
func (s *Store) retentionMarkKey(ref TranscriptRef) string {
	return sessionPrefix(s.cfg.Prefix, ref) + RetentionMarkName
}

// putRetentionMark stores the mark of ref, naming the segments of ls, create-only.
// It reports false when a mark is there already (another job's, kept as it is).
func (s *Store) putRetentionMark(ctx context.Context, ref TranscriptRef, ls sessionListing, reason string) (bool, error) {
	m := retentionMark{Format: retentionMarkFormat, Reason: reason, LastUpdate: ls.newest.UTC(),
		MarkedAt: s.cfg.Now().UTC(), Segments: relKeys(ls.infos)}
	data, err := json.Marshal(m)
	if err != nil {
		return false, err
	}
	data = append(data, '\n')
	key := s.retentionMarkKey(ref)
	err = s.cfg.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)),
		bucket.PutOptions{Checksum: ObjectChecksum(data), ContentType: "application/json"})
	if errors.Is(err, bucket.ErrExists) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("write retention mark %s: %w", key, err)
	}
	return true, nil
}

// readRetentionMark reads the mark oi (as listed). A mark that does not parse or
// has another format is returned with ok false: it is never trusted.
func (s *Store) readRetentionMark(ctx context.Context, oi bucket.ObjectInfo) (m retentionMark, ok bool, err error) {
	rc, got, err := s.cfg.Bucket.Get(ctx, oi.Key)
	if err != nil {
		return m, false, fmt.Errorf("read retention mark %s: %w", oi.Key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxRetentionMark))
	if err != nil {
		return m, false, fmt.Errorf("read retention mark %s: %w", oi.Key, err)
	}
	if json.Unmarshal(data, &m) != nil || m.Format != retentionMarkFormat {
		return retentionMark{}, false, nil
	}
	m.modTime = oi.ModTime
	if m.modTime.IsZero() {
		m.modTime = got.ModTime
	}
	return m, true, nil
}

// relKeys returns the keys of infos relative to their session.
func relKeys(infos []SegmentInfo) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = sessionRelKey(in.Key)
	}
	return out
}

// unseenWrites returns the segments of ls that are writes the set known (keys
// relative to the session) has not seen: a segment known does not name, unless it
// is a compacted segment whose every input is known or itself such a compaction (a
// compaction adds no entry). A compacted segment whose metadata cannot be read
// (corrupt) counts as a write; one that vanished meanwhile does not.
func (s *Store) unseenWrites(ctx context.Context, ls sessionListing, known []string) ([]string, error) {
	seen := make(map[string]bool, len(known))
	for _, k := range known {
		seen[k] = true
	}
	var unseen []string
	var compacted []SegmentInfo
	for _, in := range ls.infos {
		switch {
		case seen[sessionRelKey(in.Key)]:
		case in.Level == 0:
			unseen = append(unseen, in.Key)
		default:
			compacted = append(compacted, in)
		}
	}
	// Lower levels first: an output's inputs are of a lower level.
	slices.SortStableFunc(compacted, func(a, b SegmentInfo) int { return a.Level - b.Level })
	for _, in := range compacted {
		m, err := s.ReadSegmentMeta(ctx, in.Key)
		switch {
		case errors.Is(err, bucket.ErrNotFound):
			continue
		case errors.Is(err, segment.ErrCorrupt):
			unseen = append(unseen, in.Key)
			continue
		case err != nil:
			return nil, err
		}
		derived := len(m.Inputs) > 0
		for _, k := range m.Inputs {
			derived = derived && seen[sessionRelKey(k)]
		}
		if derived {
			seen[sessionRelKey(in.Key)] = true
		} else {
			unseen = append(unseen, in.Key)
		}
	}
	slices.Sort(unseen)
	return unseen, nil
}
