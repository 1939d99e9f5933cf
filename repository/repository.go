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

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Defaults of Config.
const (
	DefaultAgentID       = "default"
	DefaultWatchInterval = time.Second
	DefaultWatchMargin   = time.Minute
	// MaxNameLen is the longest session name accepted, in bytes.
	MaxNameLen = 256
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
}

// Repository creates, opens, lists, forks and deletes the sessions of one owner.
// It is bound to the owner's namespace through transcript.Store.WithNamespace, so
// it cannot read, list or delete another owner's keys: another owner's session
// answers ErrNotFound on every call, exactly like a session that does not exist.
// A Repository is safe for concurrent use.
type Repository struct {
	cfg    Config
	owner  Owner
	ns     string
	store  *transcript.Store // bound to ns
	bucket bucket.Bucket
	writer *transcript.Writer
	enc    *segment.Encoder // codecs of the read views
	dec    *segment.Decoder
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
	r := &Repository{cfg: cfg, owner: owner, ns: ns, store: bound, bucket: store.Bucket(), writer: cfg.Writer}
	if r.enc, err = segment.NewEncoder(); err != nil {
		return nil, fmt.Errorf("repository: %w", err)
	}
	if r.dec, err = segment.NewDecoder(); err != nil {
		r.enc.Close()
		return nil, fmt.Errorf("repository: %w", err)
	}
	return r, nil
}

// Close releases the repository's codecs. The store is the caller's.
func (r *Repository) Close() error {
	return errors.Join(r.enc.Close(), r.dec.Close())
}

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
	// Updated is the creation time of the session's newest segment.
	Updated time.Time
	// Entries counts the entries (the header is not one).
	Entries int
	// Leaf is the active leaf ("" for none); in strict mode the committed head.
	Leaf string
	// Strict reports a strict-mode session.
	Strict bool
	// ParentSession is the session this one was forked from ("" if none).
	ParentSession string
}

// CreateOptions are the fields of a new session.
type CreateOptions struct {
	// ID is the session id; empty means a new random UUID. See ValidateID.
	ID string
	// Name, if set, is stored as a first session_info entry. See ValidateName.
	Name string
	// Cwd is recorded in the session header.
	Cwd string
	// Strict creates the session in strict mode (a head object advanced by
	// conditional writes; the bucket must implement bucket.Conditional).
	Strict bool
}

// ValidateID checks a session id: a valid key element (see
// transcript.ValidatePart) of ASCII letters, digits, '.', '_' and '-' that does not
// start with '.'. Errors wrap ErrInvalid.
func ValidateID(id string) error {
	if err := transcript.ValidatePart("session id", id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for i, c := range id {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' ||
			c == '.' && i > 0
		if !ok {
			return fmt.Errorf("%w: session id %q: character %q at %d", ErrInvalid, id, c, i)
		}
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

// newSession returns an unloaded handle of session id.
func (r *Repository) newSession(id string) (*Session, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	ref := transcript.TranscriptRef{Namespace: r.ns, AgentID: r.cfg.AgentID, SessionID: id}
	return &Session{repo: r, id: id, ref: ref, prefix: r.store.SessionPrefix(ref)}, nil
}

// Create starts a new session and stores its header (and name) at once, so that
// it is listed and can be opened before the first append. An id that exists
// gives ErrExists. Two Creates of one id racing each other are decided by the head
// object in strict mode (one gets ErrExists); in default mode both may succeed
// and the session keeps the header first in merge order.
func (r *Repository) Create(ctx context.Context, opts CreateOptions) (*Session, error) {
	if opts.ID == "" {
		id, err := uuid.NewRandomFromReader(r.cfg.Rand)
		if err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		opts.ID = id.String()
	}
	var entries [][]byte
	if opts.Name != "" {
		if err := ValidateName(opts.Name); err != nil {
			return nil, err
		}
		e, err := r.sessionInfo(opts.Name)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return r.create(ctx, opts, "", entries)
}

// create stores a new session: header (with parentSession) and entries in one
// segment, then, for a strict session, its head.
func (r *Repository) create(ctx context.Context, opts CreateOptions, parent string, entries [][]byte) (*Session, error) {
	s, err := r.newSession(opts.ID)
	if err != nil {
		return nil, err
	}
	if opts.Strict {
		if _, ok := r.bucket.(bucket.Conditional); !ok {
			return nil, fmt.Errorf("create session %q: strict: %w", opts.ID, ErrNotConditional)
		}
	}
	if exists, err := r.exists(ctx, s); err != nil {
		return nil, err
	} else if exists {
		return nil, fmt.Errorf("create session %q: %w", opts.ID, ErrExists)
	}
	h := pi.NewHeader(opts.ID, r.now(), opts.Cwd, parent)
	var batch []pi.Entry
	if len(entries) > 0 {
		if batch, err = parseBatch(entries); err != nil {
			return nil, fmt.Errorf("create session %q: %w", opts.ID, err)
		}
	}
	obj, err := r.store.PrepareSegment(s.ref, append([][]byte{h.Raw()}, entries...), r.writer)
	if err != nil {
		return nil, fmt.Errorf("create session %q: %w", opts.ID, err)
	}
	if err := r.store.PutSegment(ctx, obj.Info.Key, obj.Data); err != nil {
		return nil, fmt.Errorf("create session %q: %w", opts.ID, err)
	}
	s.header, s.entries, s.updated = h, batch, obj.Info.Time
	s.byID = map[string][]byte{h.ID(): h.Raw()}
	s.seen = map[string]bool{obj.Info.Key: true}
	for _, e := range batch {
		s.byID[e.ID()] = e.Raw()
	}
	s.leaf = pi.ActiveLeafID(batch)
	if opts.Strict {
		hs, err := r.writeHead(ctx, s.headKey(), head{}.commit(s.relName(obj.Info.Key), s.leaf), bucket.Cond{IfNoneMatch: true})
		if err != nil {
			_ = r.bucket.Delete(ctx, obj.Info.Key) // best effort: it is not committed
			if errors.Is(err, bucket.ErrPreconditionFailed) {
				return nil, fmt.Errorf("create session %q: %w", opts.ID, ErrExists)
			}
			return nil, fmt.Errorf("create session %q: %w", opts.ID, err)
		}
		s.strict, s.hs = true, hs
	}
	return s, nil
}

// exists reports whether the session has a segment or a head.
func (r *Repository) exists(ctx context.Context, s *Session) (bool, error) {
	infos, err := r.store.ListSegments(ctx, s.ref)
	if err != nil {
		return false, fmt.Errorf("session %q: %w", s.id, err)
	}
	if len(infos) > 0 {
		return true, nil
	}
	_, ok, err := r.readHead(ctx, s.headKey())
	return ok, err
}

// sessionInfo builds a session_info entry naming the session, as a root.
func (r *Repository) sessionInfo(name string) ([]byte, error) {
	id, err := pi.NewID(r.cfg.Rand, nil)
	if err != nil {
		return nil, err
	}
	e, err := pi.NewEntry(pi.TypeSessionInfo, id, "", r.now(), pi.Member{Key: "name", Value: pi.AppendString(nil, name)})
	if err != nil {
		return nil, err
	}
	return e.Raw(), nil
}

// Open opens the session id. A session that does not exist, or is another
// owner's, gives an error wrapping ErrNotFound. A strict session whose stored
// head does not match its committed entries opens, but refuses appends (see
// Session.Err).
func (r *Repository) Open(ctx context.Context, id string) (*Session, error) {
	s, err := r.newSession(id)
	if err != nil {
		return nil, err
	}
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// List returns the metadata of every session of the owner and agent, in id order.
// It reads each session whole; sessions deleted meanwhile are left out.
func (r *Repository) List(ctx context.Context) ([]SessionInfo, error) {
	ids, err := r.store.ListSessions(ctx, r.ns, r.cfg.AgentID)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	infos := make([]SessionInfo, len(ids))
	found := make([]bool, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.ListConcurrency)
	for i, id := range ids {
		if ValidateID(id) != nil {
			continue // not a repository session
		}
		g.Go(func() error {
			s, err := r.Open(gctx, id)
			if errors.Is(err, ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			infos[i], found[i] = s.info(), true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]SessionInfo, 0, len(ids))
	for i, ok := range found {
		if ok {
			out = append(out, infos[i])
		}
	}
	return out, nil
}

// Fork creates a new session whose history is the path from the root to entry
// atEntryID of session id (byte-for-byte), with parentSession set to id in its
// header. The fork is strict if the source is. It returns the new session.
func (r *Repository) Fork(ctx context.Context, id, atEntryID string) (*Session, error) {
	src, err := r.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	path, ok := pi.PathToRoot(src.entries, pi.NewIndex(src.entries), atEntryID)
	if !ok {
		return nil, fmt.Errorf("fork session %q: entry %q: %w", id, atEntryID, ErrNotFound)
	}
	newID, err := uuid.NewRandomFromReader(r.cfg.Rand)
	if err != nil {
		return nil, fmt.Errorf("fork session %q: %w", id, err)
	}
	opts := CreateOptions{ID: newID.String(), Cwd: src.header.Cwd(), Strict: src.strict}
	return r.create(ctx, opts, id, rawsOf(path))
}

// Delete removes every object of session id (segments of all levels, deletion
// marks, the head). Afterwards every reader gets ErrNotFound. A session that does
// not exist, or is another owner's, gives ErrNotFound. A default-mode append
// racing the delete may leave its segment behind (a strict one cannot commit: its
// head write fails, and it removes its segment).
func (r *Repository) Delete(ctx context.Context, id string) error {
	s, err := r.newSession(id)
	if err != nil {
		return err
	}
	exists, err := r.exists(ctx, s)
	if err != nil {
		return err
	}
	if !exists {
		return notFound(id)
	}
	if err := r.store.Delete(ctx, s.ref); err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	return nil
}

// CollectUncommitted deletes the segments of strict session id that its head does
// not commit and that were created more than olderThan ago (a writer that lost a
// head race, or crashed between its segment and its head write). olderThan must
// exceed the longest time between a segment's creation and its head write, clock
// skew included, so that an append in progress keeps its segment. It lists before
// it reads the head, so a segment committed in between is kept. It returns how
// many segments it deleted; a default-mode session has none to collect. Strict
// sessions must be written only through a Repository: a segment that a
// SessionTree's mirror uploads is not committed, is invisible to strict readers,
// and is collected here.
func (r *Repository) CollectUncommitted(ctx context.Context, id string, olderThan time.Duration) (int, error) {
	s, err := r.newSession(id)
	if err != nil {
		return 0, err
	}
	infos, err := r.store.ListSegments(ctx, s.ref)
	if err != nil {
		return 0, fmt.Errorf("collect session %q: %w", id, err)
	}
	hs, ok, err := r.readHead(ctx, s.headKey())
	if err != nil {
		return 0, fmt.Errorf("collect session %q: %w", id, err)
	}
	if !ok {
		if len(infos) == 0 {
			return 0, notFound(id)
		}
		return 0, nil
	}
	cutoff := r.now().Add(-olderThan)
	deleted := 0
	for _, info := range infos {
		if hs.names(s.relName(info.Key)) || info.Time.After(cutoff) {
			continue
		}
		if err := r.bucket.Delete(ctx, info.Key); err != nil {
			return deleted, fmt.Errorf("collect session %q: %w", id, err)
		}
		deleted++
	}
	return deleted, nil
}

// OpenAsOf opens session id read-only as it was at time t: only segments created
// at or before t are read (by the time in their keys). In strict mode only
// committed ones, and the head is the one computed from them. A session without
// segments by then gives ErrNotFound.
func (r *Repository) OpenAsOf(ctx context.Context, id string, t time.Time) (*Session, error) {
	s, err := r.newSession(id)
	if err != nil {
		return nil, err
	}
	s.asOf = t.UTC()
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}
