package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// The rules of the commands that write (import and append). A session's header is
// its first segment's first entry, and every reader (export, restore, context)
// takes it from there; so a writer reads the session before writing and refuses,
// writing nothing, whatever would leave it unreadable, merged with another session,
// or in conflict. --force (append only) writes the lines as given.
var (
	// errNoHeader: the session does not exist, and the input does not start
	// with a session header.
	errNoHeader = errors.New("a new session starts with its session header")
	// errSecondHeader: the input brings a header the session does not hold.
	errSecondHeader = errors.New("a session has one header")
	// errEntryConflict: the session holds an id of the input with other bytes,
	// or the input holds one id twice with other bytes (transcript.ErrConflict).
	errEntryConflict = fmt.Errorf("entry id %w", transcript.ErrConflict)
	// errStrictSession: the session is strict (it has a head object), whose head
	// only the repository (transcript-serve) advances.
	errStrictSession = errors.New("strict session")
)

// writeResult is what writeSession did.
type writeResult struct {
	// existing: the session held entries before.
	existing bool
	// fresh counts the lines written (those the session lacked).
	fresh int
	// segments are the segments written (none when nothing was fresh).
	segments []transcript.SegmentInfo
}

// writeSession writes lines (the header and entries an import or an append
// brings, each a valid entry) to session ref of s: it reads the session first
// and writes the lines it lacks as new segments, skipping those it holds with the
// same bytes, so that writing one input twice changes nothing. Unless force, it
// refuses, before writing anything, a new session whose input does not start with
// a header, a header the session does not hold, an id held with other bytes, and a
// strict session.
func writeSession(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, lines [][]byte, w *transcript.Writer, force bool) (writeResult, error) {
	var res writeResult
	fresh := lines
	if !force {
		if err := refuseStrict(ctx, s, ref); err != nil {
			return res, err
		}
		var stored [][]byte
		read, err := s.ReadAll(ctx, ref)
		switch {
		case err == nil:
			stored = read.Raw()
		case !errors.Is(err, bucket.ErrNotFound):
			return res, err
		}
		res.existing = len(stored) > 0
		if fresh, err = freshLines(ref, stored, lines); err != nil {
			return res, err
		}
	}
	res.fresh = len(fresh)
	if len(fresh) == 0 {
		return res, nil
	}
	infos, err := s.AppendSegments(ctx, ref, fresh, w)
	res.segments = infos
	return res, err
}

// refuseStrict returns errStrictSession when ref has a head object.
func refuseStrict(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef) error {
	_, err := s.ReadHead(ctx, ref)
	switch {
	case err == nil || errors.Is(err, transcript.ErrInvalidHead):
		return fmt.Errorf("%w: session %s is strict (it has a %s): append through transcript-serve, which advances its head", errStrictSession, ref.Norm(), transcript.HeadName)
	case errors.Is(err, bucket.ErrNotFound):
		return nil
	default:
		return err
	}
}

// freshLines returns the lines of the input the session (holding stored, in merge
// order) lacks, in input order, or the error of the first rule the input breaks.
func freshLines(ref transcript.TranscriptRef, stored, lines [][]byte) ([][]byte, error) {
	held := make(map[string][]byte, len(stored))
	storedHeader := ""
	for i, raw := range stored {
		e, err := transcript.ParseEntry(raw)
		if err != nil {
			continue
		}
		held[e.ID] = raw
		if h, err := pi.ParseHeader(raw); err == nil && i == 0 {
			storedHeader = h.ID()
		}
	}
	seen := make(map[string][]byte, len(lines))
	var fresh [][]byte
	for i, raw := range lines {
		e, err := transcript.ParseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if prev, ok := seen[e.ID]; ok {
			if !bytes.Equal(prev, raw) {
				return nil, fmt.Errorf("%w: line %d: id %s appears twice with other bytes", errEntryConflict, i+1, cmdcli.Escape(e.ID))
			}
			continue
		}
		seen[e.ID] = raw
		_, headerErr := pi.ParseHeader(raw)
		header := headerErr == nil
		if prev, ok := held[e.ID]; ok {
			if bytes.Equal(prev, raw) {
				continue // stored already
			}
			what := "entry"
			if header {
				what = "header"
			}
			return nil, fmt.Errorf("%w: line %d: session %s holds %s %s with other bytes (another session's file, or an edited line?)",
				errEntryConflict, i+1, ref.Norm(), what, cmdcli.Escape(e.ID))
		}
		switch {
		case header && len(stored) == 0 && len(fresh) == 0:
			// The header of a new session, first: as it must be.
		case header && len(stored) == 0:
			return nil, fmt.Errorf("%w: line %d is a second session header (%s) after %s", errSecondHeader, i+1, cmdcli.Escape(e.ID), cmdcli.Escape(headerID(fresh[0])))
		case header && storedHeader == "":
			return nil, fmt.Errorf("%w: line %d is a session header, and session %s exists without one first: a header can only be the first entry of its first segment", errSecondHeader, i+1, ref.Norm())
		case header:
			return nil, fmt.Errorf("%w: session %s is session %s (its header's id), the input's header is %s's: write it to another --session",
				errSecondHeader, ref.Norm(), cmdcli.Escape(storedHeader), cmdcli.Escape(e.ID))
		case len(stored) == 0 && len(fresh) == 0:
			return nil, fmt.Errorf("%w: session %s does not exist, and line %d is not a session header "+
				`({"type":"session","version":3,"id":...,"timestamp":...,"cwd":...}); `+
				"start it with one, or import a Pi session file", errNoHeader, ref.Norm(), i+1)
		}
		fresh = append(fresh, raw)
	}
	return fresh, nil
}

// headerID returns the id of a header line ("" if it is none).
func headerID(raw []byte) string {
	h, err := pi.ParseHeader(raw)
	if err != nil {
		return ""
	}
	return h.ID()
}

// keys returns the key of the first segment written ("" for none) and, when more
// than one was written, every key: the segment and segments of a summary.
func (r writeResult) keys() (first string, all []string) {
	if len(r.segments) == 0 {
		return "", nil
	}
	if len(r.segments) > 1 {
		for _, in := range r.segments {
			all = append(all, in.Key)
		}
	}
	return r.segments[0].Key, all
}
