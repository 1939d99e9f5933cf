package repository

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/transcriptstore/transcript/transcript"
)

// Defaults of Config.
const (
	DefaultAgentID       = "default"
	DefaultWatchInterval = time.Second
	DefaultWatchMargin   = time.Minute
	// MaxNameLen is the longest session name accepted, in bytes, and the
	// longest a strict session's head records (a longer name a session_info
	// entry sets is cut there: the entry keeps it whole).
	MaxNameLen = 256
	// MaxCwdLen is the longest cwd a session is created or forked with, in
	// bytes (Linux's PATH_MAX): a strict session's head records it, and every
	// append reads and writes the head.
	MaxCwdLen = 4096
)

// Config configures a Repository. The zero value of every field is usable.
type Config struct {
	// AgentID is the agent whose sessions the repository holds (default
	// DefaultAgentID).
	AgentID string
	// Writer names this process in the keys of the segments it writes (default
	// transcript.NewRandomWriter()). Watch does not deliver entries of segments
	// written under this writer's id.
	Writer *transcript.Writer
	// Now returns the current time for headers and generated entries (default
	// time.Now).
	Now func() time.Time
	// Rand is the source of generated session and entry ids (default crypto/rand).
	Rand io.Reader
	// WatchInterval is how often Watch polls the store (default
	// DefaultWatchInterval).
	WatchInterval time.Duration
	// WatchMargin is ignored: Watch lists the whole session and trusts no key
	// time, so no margin is needed. Kept so that existing configurations compile.
	WatchMargin time.Duration
	// ListConcurrency bounds how many sessions List reads at once (default 8).
	ListConcurrency int
	// MaxEntryBytes bounds one entry of an append, in bytes of JSON (default, and
	// at most, the store's limit: transcript.Store.MaxEntrySize).
	MaxEntryBytes int
}

// Repository creates, opens, lists, forks and deletes the sessions of one owner.
// It is bound to the owner's namespace through transcript.Store.WithNamespace, so
// it cannot read, list or delete another owner's keys: another owner's session
// answers bucket.ErrNotFound on every call, exactly like a session that does not exist.
// A Repository is safe for concurrent use.
type Repository struct {
	cfg    Config
	owner  Owner
	ns     string
	store  *transcript.Store // bound to ns
	writer *transcript.Writer
}

// New returns the repository of owner over store. store may be unbound or bound to
// the owner's namespace; the repository never sees any other namespace.
func New(store *transcript.Store, owner Owner, cfg Config) (*Repository, error) {
	if store == nil {
		return nil, errors.New("repository: nil store")
	}
	ns, err := owner.Namespace()
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	bound, err := store.WithNamespace(ns)
	if err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	if cfg.AgentID == "" {
		cfg.AgentID = DefaultAgentID
	}
	if err := transcript.ValidatePart("agent id", cfg.AgentID); err != nil {
		return nil, fmt.Errorf("repository: %w: %w", ErrInvalid, err)
	}
	if cfg.Writer == nil {
		cfg.Writer = transcript.NewRandomWriter()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.WatchInterval <= 0 {
		cfg.WatchInterval = DefaultWatchInterval
	}
	if cfg.WatchMargin <= 0 {
		cfg.WatchMargin = DefaultWatchMargin
	}
	if cfg.ListConcurrency <= 0 {
		cfg.ListConcurrency = 8
	}
	if limit := store.MaxEntrySize(); cfg.MaxEntryBytes <= 0 || cfg.MaxEntryBytes > limit {
		cfg.MaxEntryBytes = limit
	}
	return &Repository{cfg: cfg, owner: owner, ns: ns, store: bound, writer: cfg.Writer}, nil
}

// Close releases the repository. It holds nothing of its own today (the store,
// its bucket and codecs are the caller's), so it never fails; call it anyway, so
// that a repository that comes to hold resources releases them.
func (r *Repository) Close() error { return nil }

// Owner returns the owner the repository is bound to.
func (r *Repository) Owner() Owner { return r.owner }

// Namespace returns the owner's namespace (see Owner.Namespace).
func (r *Repository) Namespace() string { return r.ns }

// AgentID returns the agent id of the repository's sessions.
func (r *Repository) AgentID() string { return r.cfg.AgentID }

func (r *Repository) now() time.Time { return r.cfg.Now() }

// SessionInfo is the metadata List returns for a session.
type SessionInfo struct {
	ID string
	// Name is the latest non-empty name of a session_info entry ("" if none).
	Name string
	// Created is the header's timestamp (zero if unknown).
	Created time.Time
	// Updated is when the newest entry was stored: the key time of the level-0
	// segment it was first stored in (a compaction does not change it).
	Updated time.Time
	// Entries counts the entries (the header is not one).
	Entries int
	// Leaf is the active leaf ("" for none); in strict mode the committed head.
	Leaf string
	// Strict reports a strict-mode session.
	Strict bool
	// ParentSession is the session this one was forked from ("" if none).
	ParentSession string
	// Cwd is the working directory in the session's header ("" if none).
	Cwd string
}

// ValidateID checks a session id. The rule is the one every id of the store
// follows, in the library, the commands and the server alike:
// transcript.ValidatePart (1 to 128 bytes of UTF-8; no "/", "\\", "..", control,
// format or line-separator characters; not hidden, not ending in ".log", not a
// name of the key layout). So a session the command line wrote ("café", say) is
// one the repository and the server open and list. Errors wrap ErrInvalid.
func ValidateID(id string) error {
	if err := transcript.ValidatePart("session id", id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// ValidateName checks a session name: 1 to MaxNameLen bytes of valid UTF-8 without
// control characters, not only white space. Errors wrap ErrInvalid.
func ValidateName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return fmt.Errorf("%w: session name is empty", ErrInvalid)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: session name is %d bytes, over %d", ErrInvalid, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: session name is not valid UTF-8", ErrInvalid)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: session name has a control character", ErrInvalid)
	}
	return nil
}

// ValidateCwd checks the cwd a session is created or forked with: at most
// MaxCwdLen bytes. Errors wrap ErrInvalid.
func ValidateCwd(cwd string) error {
	if len(cwd) > MaxCwdLen {
		return fmt.Errorf("%w: cwd is %d bytes, over %d", ErrInvalid, len(cwd), MaxCwdLen)
	}
	return nil
}

// summaryName returns name as a strict session's head records it: cut to at
// most MaxNameLen bytes, at a character boundary.
func summaryName(name string) string {
	if len(name) <= MaxNameLen {
		return name
	}
	cut := name[:MaxNameLen]
	for len(cut) > 0 && !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut
}

// newSession returns an unloaded handle of session id.
func (r *Repository) newSession(id string) (*Session, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	ref := transcript.TranscriptRef{Namespace: r.ns, AgentID: r.cfg.AgentID, SessionID: id}
	return &Session{repo: r, id: id, ref: ref, prefix: r.store.SessionPrefix(ref)}, nil
}

// exists reports whether the session has a segment or a head.
func (r *Repository) exists(ctx context.Context, s *Session) (bool, error) {
	ok, err := r.store.SessionExists(ctx, s.ref)
	if err != nil {
		return false, fmt.Errorf("session %q: %w", s.id, err)
	}
	return ok, nil
}
