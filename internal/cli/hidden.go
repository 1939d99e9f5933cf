package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// HiddenError says that what a command asked for (a session, an agent's
// sessions, a namespace's) lists nothing because the bucket holds objects named
// exactly like its key prefix: an S3 tool's copy of a file to acme/coder/s1
// while the session's segments are under acme/coder/s1/. MinIO does not list
// what is under a prefix that an object of the same name hides, so the session
// looks absent while its segments are stored. It is not a "not found" (it does
// not wrap bucket.ErrNotFound): a reader must not take the session for a new or
// a deleted one. The exit code is 1.
type HiddenError struct {
	// What names what was asked, as NotFoundError.What does.
	What string
	// Objects are the keys of the hiding objects.
	Objects []string
}

func (e *HiddenError) Error() string {
	return e.What + ": not found (" + HidingHint(e.Objects) + ")"
}

// HidingHint says what the objects keys, named like key prefixes of the store,
// do and what to do about them.
func HidingHint(keys []string) string {
	named := make([]string, len(keys))
	for i, k := range keys {
		named[i] = Escape(k)
	}
	objects := "an object"
	if len(keys) > 1 {
		objects = Count(len(keys), "object")
	}
	return fmt.Sprintf("the bucket holds %s named like a key prefix of the store, %s, which hides the segments "+
		"under that prefix from the listings of some S3 servers (MinIO): move or delete it, and the segments list again",
		objects, strings.Join(named, ", "))
}

// NamespaceKeyPrefix returns the key prefix of namespace ns in s, ending in
// "/": an agent's key prefix is it followed by the agent.
func NamespaceKeyPrefix(s *transcript.Store, ns string) string {
	return strings.TrimSuffix(s.SessionPrefix(transcript.TranscriptRef{Namespace: ns, AgentID: "a", SessionID: "s"}), "a/s/")
}

// HidingObjects returns the keys of the objects, among those
// transcript.Store.StrayObjects names in namespace ns and in the agents asked
// for (agent when set, else every agent listed), that are named like a key
// prefix (without its "/") asked for: the agent's or the session's when
// given, or, without session, any agent's or session's there. It costs a
// delimited listing of the namespace and one of each agent asked for (and one
// of the agents, without agent), DefaultParallel at a time.
func HidingObjects(ctx context.Context, s *transcript.Store, ns, agent, session string) ([]string, error) {
	agents := []string{agent}
	if agent == "" {
		listed, err := s.ListAgents(ctx, ns)
		if err != nil {
			return nil, err
		}
		agents = listed
	}
	base := NamespaceKeyPrefix(s, ns)
	asked := func(key string) bool {
		if agent != "" && key == base+agent {
			return true // the agent's own prefix, whatever the session
		}
		if session != "" {
			for _, a := range agents {
				if key == base+a+"/"+session {
					return true
				}
			}
			return false
		}
		dir, name := "", key
		if i := strings.LastIndexByte(key, '/'); i >= 0 {
			dir, name = key[:i+1], key[i+1:]
		}
		if agent != "" && dir != base+agent+"/" || agent == "" && dir != base && strings.Count(dir, "/") != strings.Count(base, "/")+1 {
			return false // not directly under the namespace or an agent asked for
		}
		return transcript.ValidatePart("name", name) == nil
	}
	all := append([]string{""}, agents...)
	found := make([][]string, len(all))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(DefaultParallel)
	for i, a := range all {
		g.Go(func() error {
			keys, err := s.StrayObjects(gctx, ns, a)
			for _, k := range keys {
				if asked(k) {
					found[i] = append(found[i], k)
				}
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(found...), nil
}

// SessionHidingObject returns the key of the object named like the key prefix
// (without its "/") of session ref, or "" when there is none: the object that
// hides the session's segments from MinIO's listings, asked for by name (one
// Stat, no listing). An object named like its agent's key prefix does not hide
// it: MinIO lists the session's own prefix, deeper.
func SessionHidingObject(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef) (string, error) {
	key := strings.TrimSuffix(s.SessionPrefix(ref), "/")
	_, err := s.Bucket().Stat(ctx, key)
	switch {
	case errors.Is(err, bucket.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("stat %s: %w", key, err)
	}
	return key, nil
}

// EmptySelection returns the error for f's selection, which listed no session
// in s: a HiddenError when objects named like a key prefix it asks for hide
// its sessions (see HidingObjects), else SelectionNotFound. It lists the
// namespace and the agents asked for again, which only a selection found empty
// pays for; without --ns, or when these listings fail, it is SelectionNotFound.
func (f *StoreFlags) EmptySelection(ctx context.Context, s *transcript.Store) error {
	nf := f.SelectionNotFound()
	if f.Namespace == "" {
		return nf
	}
	hiding, err := HidingObjects(ctx, s, f.Namespace, f.Agent, f.Session)
	if err != nil || len(hiding) == 0 {
		return nf
	}
	return &HiddenError{What: nf.What, Objects: hiding}
}
