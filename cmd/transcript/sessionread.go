package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// One answer per session: every command that reads a session's entries (cat,
// export, context, tree, ls, restore in either layout) reads it as the server
// does. A strict session (one with a head object, created by transcript-serve)
// is the segments its head commits: a segment a losing append wrote, which no
// head commits (the compaction job deletes it later), is not part of it. A
// default-mode session is every segment listed, as before. The mode is told by
// the listing the read needs anyway (transcript.Store.ListSegmentsHead, or the
// namespace's listing of a restore, Listed.HeadListed), so a default-mode read
// costs what it did, and a strict one the GET of its head more.

// sessionReader reads one session as the server serves it (see above). It
// lists the session on its first read, unless it was made from a listing in
// hand; a strict session's head is read once and read again only when a
// segment it commits is gone (transcript.Store.ReadLeanCommitted). It is what
// restore hands its steps: a sessiontree.StoreReader, and a leanReader. It is
// not safe for concurrent use.
type sessionReader struct {
	s      *transcript.Store // the store the reads go through (a Listed's, sharing its GET slots)
	ref    transcript.TranscriptRef
	l      *transcript.Listed // the session's listing; nil until the first read lists it
	strict bool               // the listing showed a head
	head   *transcript.Head   // the head read, once read
}

// newSessionReader returns the reader of ref in s, which lists ref at its
// first read.
func newSessionReader(s *transcript.Store, ref transcript.TranscriptRef) *sessionReader {
	return &sessionReader{s: s, ref: ref.Norm()}
}

// listedSessionReader returns the reader of the session l lists, from that
// listing.
func listedSessionReader(l *transcript.Listed) *sessionReader {
	return &sessionReader{s: l.Store, ref: l.Ref(), l: l, strict: l.HeadListed()}
}

// list lists the session, unless it is listed: a default-mode session without
// segments is not found, or hidden (a cmdcli.HiddenError, which is no "not
// found") when the bucket holds an object named like its key prefix, which
// hides its segments from MinIO's listings: only a session listed empty pays
// for the Stat that asks for one (cmdcli.SessionHidingObject).
func (r *sessionReader) list(ctx context.Context) error {
	if r.l != nil {
		return nil
	}
	infos, head, err := r.s.ListSegmentsHead(ctx, r.ref)
	if err != nil {
		return err
	}
	if len(infos) == 0 && !head {
		// A failed Stat leaves the session not found, as the listing said.
		if key, err := cmdcli.SessionHidingObject(ctx, r.s, r.ref); err == nil && key != "" {
			return &cmdcli.HiddenError{What: "session " + r.ref.String(), Objects: []string{key}}
		}
		return fmt.Errorf("read %s: %w", r.ref, bucket.ErrNotFound)
	}
	r.l, r.strict = r.s.Listed(r.ref, infos), head
	return nil
}

// readHead returns the session's head, read at the first call. A head that is
// gone (the session was deleted since it was listed) is not found; one that
// cannot be read or does not parse is an error naming it.
func (r *sessionReader) readHead(ctx context.Context) (transcript.Head, error) {
	if r.head != nil {
		return *r.head, nil
	}
	h, err := r.s.ReadHead(ctx, r.ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return h, err
	}
	if err != nil {
		return h, r.headError(err)
	}
	r.head = &h
	return h, nil
}

// headError is err, a failure to read the session's head or one of a head that
// does not parse or names what is no segment, naming the head.
func (r *sessionReader) headError(err error) error {
	return fmt.Errorf("head %s: %w", r.s.SessionPrefix(r.ref)+transcript.HeadName, err)
}

// committedError is err of a read of the segments the head commits: one of
// the head (it does not parse, or names what is no segment) names the head.
func (r *sessionReader) committedError(err error) error {
	if errors.Is(err, transcript.ErrInvalidHead) {
		return r.headError(err)
	}
	return err
}

// ReadLean reads the session lean, with its payloads.
func (r *sessionReader) ReadLean(ctx context.Context, ref transcript.TranscriptRef) (*transcript.LeanResult, error) {
	return r.readLean(ctx, ref, false)
}

// ReadLeanStored reads the session lean, as stored (its payloads are put back
// by EachResolved).
func (r *sessionReader) ReadLeanStored(ctx context.Context, ref transcript.TranscriptRef) (*transcript.LeanResult, error) {
	return r.readLean(ctx, ref, true)
}

// readLean is ReadLean, or ReadLeanStored when stored is set. A one-session
// command reads at readGCPercent (tightenForRead).
func (r *sessionReader) readLean(ctx context.Context, ref transcript.TranscriptRef, stored bool) (*transcript.LeanResult, error) {
	defer tightenForRead()()
	if err := r.check(ref); err != nil {
		return nil, err
	}
	if err := r.list(ctx); err != nil {
		return nil, err
	}
	if !r.strict {
		if stored {
			return r.l.ReadLeanStored(ctx, r.ref)
		}
		return r.l.ReadLean(ctx, r.ref)
	}
	h, err := r.readHead(ctx)
	if err != nil {
		return nil, err
	}
	s := r.s
	if stored {
		s = s.Stored()
	}
	h, res, err := s.ReadLeanCommitted(ctx, r.ref, h)
	r.head = &h
	if err != nil {
		return nil, r.committedError(err)
	}
	return res, nil
}

// errHeldUnnamed is wrapped by sessionReader.ReadNew when the reader holds a
// segment the strict session's head does not name: one no head commits, whose
// entries are not the session's, or one compacted since, which only its
// compacted segment's metadata would tell (restore reads the session whole
// then, which needs no more requests than a strict session's first read).
var errHeldUnnamed = errors.New("the reader holds a segment the session's head does not name")

// ReadNew reads what a reader holding have lacks of the session: of a strict
// session, the segments its head names that have lacks
// (transcript.Store.ReadCommitted); a set holding a segment the head does not
// name is refused (errHeldUnnamed), and so is a head that names a missing
// segment.
func (r *sessionReader) ReadNew(ctx context.Context, ref transcript.TranscriptRef, have transcript.SegmentSet) (*transcript.Increment, error) {
	if err := r.check(ref); err != nil {
		return nil, err
	}
	if err := r.list(ctx); err != nil {
		return nil, err
	}
	if !r.strict {
		return r.l.ReadNew(ctx, r.ref, have)
	}
	h, err := r.readHead(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range have.Keys() {
		if !h.Commits(k) {
			return nil, fmt.Errorf("read %s: %w: %s", r.ref, errHeldUnnamed, k)
		}
	}
	return r.readCommittedFrom(ctx, h, have)
}

// readCommitted reads the strict session whole as its head commits it
// (transcript.Store.ReadCommitted), the session being known to be strict.
func (r *sessionReader) readCommitted(ctx context.Context) (*transcript.Increment, error) {
	r.strict = true
	h, err := r.readHead(ctx)
	if err != nil {
		return nil, err
	}
	return r.readCommittedFrom(ctx, h, transcript.SegmentSet{})
}

// readCommittedFrom reads what have lacks of the strict session as head h, or
// a newer head, commits it; a head that names a missing segment is an error.
func (r *sessionReader) readCommittedFrom(ctx context.Context, h transcript.Head, have transcript.SegmentSet) (*transcript.Increment, error) {
	h, inc, err := r.s.ReadCommitted(ctx, r.ref, h, have)
	r.head = &h
	if err != nil {
		return nil, r.committedError(err)
	}
	if len(inc.Missing) > 0 {
		return nil, fmt.Errorf("read %s: its head (%s, version %d) commits segments that are missing: %s (%d of %d)",
			r.ref, transcript.HeadName, h.Version, strings.Join(inc.Missing, ", "), len(inc.Missing), len(h.Segments))
	}
	return inc, nil
}

// EachResolved puts back the payloads of the entries idx of res, read as
// stored (see transcript.Store.EachResolved).
func (r *sessionReader) EachResolved(ctx context.Context, ref transcript.TranscriptRef, res *transcript.LeanResult, idx []int, fn func(i int, e transcript.ResolvedEntry) error) error {
	return r.s.EachResolved(ctx, ref, res, idx, fn)
}

// check refuses a read of another session than the reader's.
func (r *sessionReader) check(ref transcript.TranscriptRef) error {
	if ref.Norm() != r.ref {
		return fmt.Errorf("read %s: the reader is %s's", ref.Norm(), r.ref)
	}
	return nil
}
