package sessiontree

import (
	"context"
	"io"
	"time"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript"
)

// RuntimeContext is the identity a tree is bound to when it is opened. It decides
// the namespace of every local path and remote key of the tree, for its whole
// life, including flushes that run later in the background.
type RuntimeContext struct {
	// Namespace is the owner's namespace (tenant or user); empty means
	// transcript.DefaultNamespace. It is validated like a TranscriptRef part.
	Namespace string
	// UserID identifies the acting user (informational; not part of any path).
	UserID string
}

// NamespaceName returns the effective namespace.
func (rc RuntimeContext) NamespaceName() string {
	if rc.Namespace == "" {
		return transcript.DefaultNamespace
	}
	return rc.Namespace
}

// Ref returns the TranscriptRef of one session in rc's namespace, validated.
func (rc RuntimeContext) Ref(agentID, sessionID string) (transcript.TranscriptRef, error) {
	ref := transcript.TranscriptRef{Namespace: rc.NamespaceName(), AgentID: agentID, SessionID: sessionID}
	if err := ref.Validate(); err != nil {
		return transcript.TranscriptRef{}, err
	}
	return ref, nil
}

// RemoteReader reads a session's entries back from the transcript store.
type RemoteReader interface {
	// ReadAll returns the union-merge of ref's segments: its raw entries (JSON
	// lines without "\n") in the store's deterministic merge order. The session
	// header, if stored, is an entry of type "session". A session with no segments
	// returns an error wrapping bucket.ErrNotFound (or no entries). Read-only; no
	// side effects.
	ReadAll(ctx context.Context, ref transcript.TranscriptRef) (*transcript.MergeResult, error)
}

// Config configures trees. The zero value of every field but Root is usable.
type Config struct {
	// Root is the directory under which the local files live:
	// {Root}/{namespace}/agents/{agentId}/sessions/{sessionId}.jsonl and .log.jsonl.
	Root string
	// Uploader receives each flush's new local entries; nil keeps the tree local.
	Uploader mirror.Uploader
	// Remote is read by SyncFromRemote and Restore; nil disables them. An
	// IncrementalReader (transcript.Store is one) is read incrementally.
	Remote RemoteReader
	// Now returns the current time for new entries; nil means time.Now.
	Now func() time.Time
	// Rand is the source of new entry ids; nil means crypto/rand.
	Rand io.Reader
	// NoSync skips fsync (tests and benchmarks only; weakens durability).
	NoSync bool
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
