package repository

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// CreateOptions are the fields of a new session.
type CreateOptions struct {
	// ID is the session id; empty means a new random UUID. See ValidateID.
	ID string
	// Name, if set, is stored as a first session_info entry. See ValidateName.
	Name string
	// Cwd is recorded in the session header.
	Cwd string
	// Strict creates the session in strict mode (a head object advanced by
	// conditional writes, transcript.Head).
	Strict bool
}

// Create starts a new session and stores its header (and name) at once, so that
// it is listed and can be opened before the first append. An id that exists
// gives an error wrapping bucket.ErrExists. Two Creates of one id racing each
// other are decided by the head object in strict mode (one gets
// bucket.ErrExists); in default mode both may succeed and the session keeps the
// header first in merge order.
func (r *Repository) Create(ctx context.Context, opts CreateOptions) (*Session, error) {
	if opts.ID == "" {
		id, err := uuid.NewRandomFromReader(r.cfg.Rand)
		if err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		opts.ID = id.String()
	}
	if err := ValidateCwd(opts.Cwd); err != nil {
		return nil, err
	}
	var batch []pi.Entry
	if opts.Name != "" {
		if err := ValidateName(opts.Name); err != nil {
			return nil, err
		}
		raw, err := r.sessionInfo(opts.Name)
		if err != nil {
			return nil, err
		}
		e, err := pi.ParseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("create session %q: %w", opts.ID, err)
		}
		batch = append(batch, e)
	}
	return r.create(ctx, opts, "", batch, nil)
}

// create stores a new session: header (with parentSession) and batch in one
// segment, then, for a strict session, its head (transcript.Store.CreateSession).
// batch is entries this repository made or a handle holds (a fork's path), each
// id once: they are not checked again, and the new handle shares their bytes.
// stored, when not nil, is batch as stored (references in place of payloads),
// which the segment holds instead (a fork's: see storedForms).
func (r *Repository) create(ctx context.Context, opts CreateOptions, parent string, batch []pi.Entry, stored *storedPath) (*Session, error) {
	s, err := r.newSession(opts.ID)
	if err != nil {
		return nil, err
	}
	h := pi.NewHeader(opts.ID, r.now(), opts.Cwd, parent)
	entries := rawsOf(batch)
	leaf := pi.ActiveLeafID(batch)
	copts := transcript.CreateOptions{Strict: opts.Strict, Head: leaf}
	if opts.Strict {
		copts.Summary = &transcript.Summary{Cwd: opts.Cwd, ParentSession: parent, Name: summaryName(pi.SessionName(batch)), Entries: len(batch)}
		if t, err := time.Parse(time.RFC3339Nano, h.Timestamp()); err == nil {
			copts.Summary.Created = t
		}
	}
	written := append([][]byte{h.Raw()}, entries...)
	if stored != nil {
		written, copts.Refs = append([][]byte{h.Raw()}, stored.raws...), append([][]transcript.PayloadRef{nil}, stored.refs...)
		copts.Check = stored.check
	}
	info, head, err := r.store.CreateSession(ctx, s.ref, written, r.writer, copts)
	if err != nil {
		return nil, fmt.Errorf("create session %q: %w", opts.ID, err)
	}
	s.strict, s.hs, s.header = opts.Strict, head, h
	s.byID, s.waiting = map[string][]byte{h.ID(): h.Raw()}, map[string]bool{}
	s.added(info, 1, batch) // after the header
	s.have = transcript.NewSegmentSet(info.Key)
	s.leaf = leaf
	return s, nil
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

// Delete removes every object of session id (segments of all levels, deletion
// marks, the head: transcript.Store.Delete). Afterwards every reader gets
// bucket.ErrNotFound. A session that does not exist, or is another owner's, gives
// bucket.ErrNotFound. A default-mode append racing the delete may leave its
// segment behind (a strict one cannot commit: its head write fails, and it
// removes its segment); segments without the session's header are no session
// (load), so such a leftover does not bring it back. A DELETE of an id that
// holds only such leftovers removes them and gives bucket.ErrNotFound.
func (r *Repository) Delete(ctx context.Context, id string) error {
	s, err := r.newSession(id)
	if err != nil {
		return err
	}
	exists, err := r.exists(ctx, s)
	if err != nil {
		return err
	}
	// Segments without the session's header (an append that raced an
	// earlier delete, a delete stopped part way) are no session, so the
	// answer is not found; they are deleted all the same, so that a DELETE
	// leaves nothing under the id.
	if err := r.store.Delete(ctx, s.ref); err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	if !exists {
		return notFound(id)
	}
	return nil
}
