package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/internal/fsutil"
	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// The layouts restore writes (--layout).
const (
	layoutSessionTree = "sessiontree"
	layoutPi          = "pi"
)

// errNotPiPlaceable is wrapped when a session's header does not say where Pi
// keeps it (its cwd or its id cannot make Pi's path).
var errNotPiPlaceable = errors.New("cannot place the session in Pi's layout")

// piSessionPath is where Pi keeps the session of header h, relative to its
// sessions root: "--<cwd>--/<timestamp>_<id>.jsonl", where <cwd> is the header's
// cwd without its leading separator and with "/", "\" and ":" as "-", and
// <timestamp> the header's timestamp with ":" and "." as "-" (Pi's
// getDefaultSessionDir and newSession). The cwd must be absolute (Pi records
// the resolved cwd); a Unix one is cleaned as Node's path.resolve does.
func piSessionPath(h pi.Header) (string, error) {
	cwd := h.Cwd()
	switch {
	case strings.HasPrefix(cwd, "/"):
		cwd = path.Clean(cwd)
	case windowsAbs.MatchString(cwd):
	default:
		return "", fmt.Errorf("%w: its header's cwd %q is not an absolute path", errNotPiPlaceable, cwd)
	}
	if strings.HasPrefix(cwd, "/") || strings.HasPrefix(cwd, `\`) {
		cwd = cwd[1:] // Pi drops one leading separator
	}
	dir := "--" + piDirReplacer.Replace(cwd) + "--"
	name := strings.NewReplacer(":", "-", ".", "-").Replace(h.Timestamp()) + "_" + h.ID() + ".jsonl"
	for _, el := range []string{dir, name} {
		if strings.ContainsAny(el, "/\\\x00") || len(el) > 255 {
			return "", fmt.Errorf("%w: %q is not a file name", errNotPiPlaceable, el)
		}
	}
	return dir + "/" + name, nil
}

var (
	// windowsAbs matches a Windows drive path (Pi on Windows records one).
	windowsAbs = regexp.MustCompile(`^[A-Za-z]:[\\/]`)
	// piDirReplacer is the replacement of Pi's session folder names.
	piDirReplacer = strings.NewReplacer("/", "-", `\`, "-", ":", "-")
)

// restorePiSession writes ref as Pi's own file under out (piSessionPath): the
// header first, then every entry in merge order, byte for byte, as export
// writes it; its modification time is that of its newest entry, so that Pi's
// continueRecent (the newest file) resumes the session Pi would have. The file
// is built in scratch and moved into place, unless out holds an identical one;
// a different one whose entries the session lacks is replaced only with force.
//
// The session is read as stored and its payloads put back as the file is
// written (as restoreLean does), unless a reference could change what the file
// holds: the kind of an entry (sessiontree.ClassifyStored), a "timestamp" or
// the header's "cwd" (piStoredFields); then, or when a payload turns out not to
// be a JSON string's contents, it is read with its payloads.
func restorePiSession(ctx context.Context, s sessiontree.StoreReader, ref transcript.TranscriptRef, out, scratch string, force bool) (restoreOutcome, int, int64, error) {
	lr, ok := s.(leanReader)
	if !ok {
		return 0, 0, 0, fmt.Errorf("restore %s: %T cannot read a session lean", ref, s)
	}
	res, err := lr.ReadLeanStored(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return 0, 0, 0, fmt.Errorf("%w (or it has no session header)", errSessionNotFound(ref))
	}
	if err != nil {
		return 0, 0, 0, err
	}
	boundHeap(res.Size() + payloadWindow(res))
	if kinds, ok := sessiontree.ClassifyStored(res, piStoredFields...); ok {
		sess := leanSessionOf(res, func(i int) (sessiontree.RawKind, error) { return kinds[i], nil }, nil)
		outcome, n, size, err := restorePiFile(ctx, lr, sess, ref, out, scratch, force)
		if !errors.Is(err, sessiontree.ErrNotPlain) {
			return outcome, n, size, err
		}
	}
	if res, err = lr.ReadLean(ctx, ref); err != nil {
		return 0, 0, 0, err
	}
	boundHeap(res.Size())
	return restorePiFile(ctx, lr, newLeanSession(res, nil), ref, out, scratch, force)
}

// piStoredFields are the top-level fields beside an entry's kind whose values
// the Pi layout's file depends on: where it goes (the header's cwd and
// timestamp) and its modification time (the entries' timestamps).
var piStoredFields = []string{"timestamp", "cwd"}

// restorePiFile is restorePiSession of the session sess, its payloads put back
// by src as the file is written (none when sess was read with them).
func restorePiFile(ctx context.Context, src sessiontree.PayloadSource, sess *leanSession, ref transcript.TranscriptRef, out, scratch string, force bool) (restoreOutcome, int, int64, error) {
	res := sess.res
	if sess.header < 0 {
		return 0, 0, 0, fmt.Errorf("%w (or it has no session header)", errSessionNotFound(ref))
	}
	h, err := pi.ParseHeader(res.Raw(sess.header))
	if err != nil {
		return 0, 0, 0, err
	}
	rel, err := piSessionPath(h)
	if err != nil {
		return 0, 0, 0, err
	}
	dest := filepath.Join(out, filepath.FromSlash(rel))
	tmp := filepath.Join(scratch, ref.Namespace+"~"+ref.AgentID+"~"+ref.SessionID+".jsonl")
	defer os.Remove(tmp)
	if err := fsutil.WriteFileAtomic(tmp, false, func(w io.Writer) error { _, err := sess.writeExportResolved(ctx, w, src, ref); return err }); err != nil {
		return 0, 0, 0, err
	}
	same, err := sameFile(tmp, dest)
	if err != nil || same {
		return outcomeSkipped, sess.n, 0, err
	}
	if !force {
		if err := checkNoLocalOnly(dest, sess.has); err != nil {
			return 0, 0, 0, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return 0, 0, 0, err
	}
	if err := os.Chmod(tmp, 0o644); err != nil { // as Pi creates its files
		return 0, 0, 0, err
	}
	if t := newestEntryTime(sess, h); !t.IsZero() {
		if err := os.Chtimes(tmp, t, t); err != nil {
			return 0, 0, 0, err
		}
	}
	size := fileSize(tmp)
	if err := os.Rename(tmp, dest); err != nil {
		return 0, 0, 0, err
	}
	return outcomeRestored, sess.n, size, fsutil.SyncDir(filepath.Dir(dest))
}

// newestEntryTime is the latest "timestamp" of the session's entries (Pi
// stamps each entry as it appends it, so this is about when Pi last wrote the
// file), or the header's when no entry has one.
func newestEntryTime(sess *leanSession, h pi.Header) time.Time {
	parse := func(v string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}
		}
		return t
	}
	newest := parse(h.Timestamp())
	for raw := range sess.entries() {
		if v, ok := jsonscan.String(jsonscan.Field(raw, "timestamp")); ok {
			if t := parse(v); t.After(newest) {
				newest = t
			}
		}
	}
	return newest
}
