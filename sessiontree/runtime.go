package sessiontree

import (
	"context"
	"io"
	"time"

	"github.com/transcriptstore/transcript/transcript"
)

// Identity is who a tree acts for: the namespace (tenant) and the user it is
// bound to when it is opened. The namespace decides every local path and store
// key of the tree, for its whole life, including flushes that run later in the
// background.
type Identity struct {
	// Namespace is the owner's namespace (tenant or user); empty means
	// transcript.DefaultNamespace. It is validated like a TranscriptRef part.
	Namespace string
	// UserID identifies the acting user (informational; not part of any path).
	UserID string
}

// NamespaceName returns the effective namespace.
func (id Identity) NamespaceName() string {
	if id.Namespace == "" {
		return transcript.DefaultNamespace
	}
	return id.Namespace
}

// Ref returns the TranscriptRef of one session in id's namespace, validated.
func (id Identity) Ref(agentID, sessionID string) (transcript.TranscriptRef, error) {
	ref := transcript.TranscriptRef{Namespace: id.NamespaceName(), AgentID: agentID, SessionID: sessionID}
	if err := ref.Validate(); err != nil {
		return transcript.TranscriptRef{}, err
	}
	return ref, nil
}

// StoreReader is the port through which a Tree reads what the transcript store
// holds of its session: transcript.Store implements it, and so does
// transcript.Listed (a reader that uses a listing in hand).
type StoreReader interface {
	// ReadNew returns the union-merge of ref's segments that have does not hold
	// (see transcript.Store.ReadNew), and the set held once they are applied: what
	// a Tree's first read of a session (an empty set) gets is the whole session,
	// later reads cost what is new. Raw entries are JSON lines without "\n"; the
	// session header, if stored, is an entry of type "session". A session with no
	// segments returns an error wrapping ErrNotFound, or an increment without
	// entries. Read-only; no side effects.
	ReadNew(ctx context.Context, ref transcript.TranscriptRef, have transcript.SegmentSet) (*transcript.Increment, error)
}

// Config configures trees. The zero value of every field but Root is usable.
type Config struct {
	// Root is the directory under which the local files live (see FilesOf).
	Root string
	// Uploader receives each flush's new local entries; nil keeps the tree local.
	Uploader Uploader
	// Store is read by Pull and Restore; nil disables them.
	Store StoreReader
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
