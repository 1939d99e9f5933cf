package transcript

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ListSessions lists the session ids of agent in namespace (empty: the default), in
// lexical order. A store bound to another namespace sees none.
func (s *Store) ListSessions(ctx context.Context, namespace, agent string) ([]string, error) {
	ref, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: agent, SessionID: "x"})
	if err != nil || !visible {
		return nil, err
	}
	return s.listChildren(ctx, keyPrefix(s.cfg.Prefix, ref.Namespace, ref.AgentID))
}

// ListAgents lists the agent ids that have sessions in namespace (empty: the default).
func (s *Store) ListAgents(ctx context.Context, namespace string) ([]string, error) {
	ref, visible, err := s.checkRef(TranscriptRef{Namespace: namespace, AgentID: "x", SessionID: "x"})
	if err != nil || !visible {
		return nil, err
	}
	return s.listChildren(ctx, keyPrefix(s.cfg.Prefix, ref.Namespace))
}

// ListNamespaces lists the namespaces that hold sessions; a bound store sees only its own.
func (s *Store) ListNamespaces(ctx context.Context) ([]string, error) {
	all, err := s.listChildren(ctx, keyPrefix(s.cfg.Prefix))
	if err != nil || s.cfg.Namespace == "" {
		return all, err
	}
	for _, ns := range all {
		if ns == s.cfg.Namespace {
			return []string{ns}, nil
		}
	}
	return nil, nil
}

func (s *Store) listChildren(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: prefix, Delimited: true}, func(oi bucket.ObjectInfo) error {
		if oi.IsPrefix {
			name := strings.TrimSuffix(strings.TrimPrefix(oi.Key, prefix), "/")
			if ValidatePart("name", name) == nil {
				out = append(out, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wrapKey("list", prefix, err)
	}
	return out, nil
}

// StrayObjects returns the keys of the objects directly under the key prefix
// of namespace (agent "") or of one of its agents, and of every object below a
// folder there whose name no id can take (a name of the key layout such as
// "L0" or "gc", a hidden name): nothing of the store's layout is there
// (sessions, agents, the namespace's payload store and its followers' markers
// are prefixes below them, and ListAgents and ListSessions pass such folders
// over), so such an object is a file another tool dropped, which readers never
// see: a session's segments copied one level too high, say. Directory markers
// do not count. A store bound to another namespace sees nothing.
func (s *Store) StrayObjects(ctx context.Context, namespace, agent string) ([]string, error) {
	nsPrefix, prefix, visible, err := s.namespaceListing(namespace, agent)
	if err != nil || !visible {
		return nil, err
	}
	if agent == "" {
		prefix = nsPrefix
	}
	var out, folders []string
	err = s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: prefix, Delimited: true}, func(oi bucket.ObjectInfo) error {
		if !oi.IsPrefix {
			if !IsDirectoryMarker(oi.Key) {
				out = append(out, oi.Key)
			}
			return nil
		}
		// A folder object for the prefix itself (an S3 console's "create
		// folder") lists as the prefix: it names no folder below it.
		name := strings.TrimSuffix(strings.TrimPrefix(oi.Key, prefix), "/")
		if name != "" && ValidatePart("name", name) != nil && (agent != "" || name != payloadDir && name != followersDir) {
			folders = append(folders, oi.Key)
		}
		return nil
	})
	if err != nil {
		return nil, wrapKey("list", prefix, err)
	}
	for _, f := range folders {
		err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: f}, func(oi bucket.ObjectInfo) error {
			if !IsDirectoryMarker(oi.Key) {
				out = append(out, oi.Key)
			}
			return nil
		})
		if err != nil {
			return nil, wrapKey("list", f, err)
		}
	}
	slices.Sort(out)
	return out, nil
}

// IsDirectoryMarker reports whether key is a "folder" object: a key ending in "/",
// which S3 consoles and some S3 tools create so that a prefix shows as a folder.
// Such a key is never a segment, mark or head; the store ignores it.
func IsDirectoryMarker(key string) bool { return strings.HasSuffix(key, "/") }

// HoldsObjects reports whether the key prefix of session ref holds any object
// other than a directory marker or the cached summary (SummaryName). A delimited
// listing cannot tell a session from a prefix that only a folder object made
// (ListSessions returns both), nor from one where only the summary outlived a
// deleted session (a list that derived it while the session was being deleted
// writes it back after the delete): commands that read many sessions ask this of
// a listed session that turns out to have no segments, and leave it out when it
// holds nothing else.
func (s *Store) HoldsObjects(ctx context.Context, ref TranscriptRef) (bool, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return false, err
	}
	prefix := sessionPrefix(s.cfg.Prefix, ref)
	held := false
	err = s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: prefix}, func(oi bucket.ObjectInfo) error {
		if IsDirectoryMarker(oi.Key) || isSummaryName(strings.TrimPrefix(oi.Key, prefix)) {
			return nil
		}
		held = true
		return errStopListing
	})
	if err != nil && !errors.Is(err, errStopListing) {
		return false, wrapKey("list", prefix, err)
	}
	return held, nil
}

// errStopListing ends a listing early from its callback.
var errStopListing = errors.New("stop listing")
