package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// followersDir is the element under a namespace's key prefix that holds the
// markers of the followers (transcript follow) that upload into it:
//
//	{prefix}/{namespace}/.followers/{follower id}
//
// A hidden name, which no agent id can take (ValidatePart), so listings of
// agents and sessions pass it over; no compaction, retention or delete touches
// it. A follower keeps its marker there so that it can tell a store that lost
// everything it handed over (the bucket or the store's prefix emptied: the
// marker went with it) from one whose sessions were deleted on purpose (a
// retention policy: the marker stays).
const followersDir = ".followers"

// followerMarkerKey returns the key of follower id's marker in namespace, and
// whether a store bound to another namespace can see it.
func (s *Store) followerMarkerKey(namespace, id string) (string, bool, error) {
	ref, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: "x", SessionID: "x"})
	if err != nil || !visible {
		return "", visible, err
	}
	if err := ValidateWriterID(id); err != nil {
		return "", false, fmt.Errorf("follower id: %w", err)
	}
	return keyPrefix(s.cfg.Prefix, ref.Namespace, followersDir) + id, true, nil
}

// PutFollowerMarker stores body (a short description of the follower) as the
// marker of the follower named id (a writer id: ValidateWriterID) in
// namespace. A marker already there is left as it is. A store bound to another
// namespace refuses it as not found.
func (s *Store) PutFollowerMarker(ctx context.Context, namespace, id string, body []byte) error {
	key, visible, err := s.followerMarkerKey(namespace, id)
	if err != nil {
		return err
	}
	if !visible {
		return fmt.Errorf("follower marker %s of namespace %s: %w", id, namespace, bucket.ErrNotFound)
	}
	err = s.cfg.Bucket.Put(ctx, key, bytes.NewReader(body), int64(len(body)), bucket.PutOptions{ContentType: "application/json"})
	if err == nil || errors.Is(err, bucket.ErrExists) {
		return nil
	}
	return wrapKey("put", key, err)
}

// FollowerMarkerExists reports whether the store holds the marker of follower
// id in namespace (one HEAD).
func (s *Store) FollowerMarkerExists(ctx context.Context, namespace, id string) (bool, error) {
	key, visible, err := s.followerMarkerKey(namespace, id)
	if err != nil || !visible {
		return false, err
	}
	_, err = s.cfg.Bucket.Stat(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, bucket.ErrNotFound):
		return false, nil
	}
	return false, wrapKey("stat", key, err)
}
