package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/transcriptstore/transcript/follow"
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
// keeps it (its cwd or its id cannot make Pi's path; piPlace falls back to
// the agent's folder for the cwd).
var errNotPiPlaceable = errors.New("cannot place the session in Pi's layout")

// piSessionPath is where Pi keeps the session of header h, relative to its
// sessions root: "--<cwd>--/<timestamp>_<id>.jsonl", where <cwd> is the header's
// cwd without its leading separator and with "/", "\" and ":" as "-", and
// <timestamp> the header's timestamp with ":" and "." as "-" (Pi's
// getDefaultSessionDir and newSession). The cwd must be absolute (Pi records
// the resolved cwd); a Unix one is cleaned as Node's path.resolve does.
func piSessionPath(h pi.Header) (string, error) {
	dir, err := piSessionDir(h)
	if err != nil {
		return "", err
	}
	name, err := piSessionName(h)
	if err != nil {
		return "", err
	}
	return dir + "/" + name, nil
}

// piSessionDir is the folder of Pi's sessions root that the cwd of header h
// names ("--<cwd>--", see piSessionPath).
func piSessionDir(h pi.Header) (string, error) {
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
	return piFileName("--" + piDirReplacer.Replace(cwd) + "--")
}

// piSessionName is the name Pi gives the file of the session of header h
// ("<timestamp>_<id>.jsonl", see piSessionPath).
func piSessionName(h pi.Header) (string, error) {
	return piFileName(strings.NewReplacer(":", "-", ".", "-").Replace(h.Timestamp()) + "_" + h.ID() + ".jsonl")
}

// piFileName returns el when it is one element of a path, else an error
// wrapping errNotPiPlaceable.
func piFileName(el string) (string, error) {
	if strings.ContainsAny(el, "/\\\x00") || len(el) > 255 || el == "." || el == ".." {
		return "", fmt.Errorf("%w: %q is not a file name", errNotPiPlaceable, el)
	}
	return el, nil
}

// piAgentFolder returns the folder of Pi's sessions root that agent names,
// when agent is the name 'transcript follow' gives such a folder: a name
// "--...--" that follow.PartName maps to agent (follow.NameOfPart; a name
// PartName shortened cannot be read back). It is false for any other agent
// (follow --agent, other writers).
func piAgentFolder(agent string) (string, bool) {
	folder, ok := followedFolder(agent)
	if !ok || len(folder) < 4 || !strings.HasPrefix(folder, "--") || !strings.HasSuffix(folder, "--") {
		return "", false
	}
	return folder, true
}

// followedFolder is the folder name follow.PartName made agent of
// (follow.NameOfPart), when that is one element of a path; false otherwise.
func followedFolder(agent string) (string, bool) {
	folder, ok := follow.NameOfPart(agent)
	if !ok {
		return "", false
	}
	if _, err := piFileName(folder); err != nil {
		return "", false
	}
	return folder, true
}

// piPlace is where restore --layout pi writes the session ref of header h,
// relative to Pi's sessions root, in a file named as Pi names it
// (piSessionName). The folder is, first that applies:
//
//   - the folder the session was stored from, when its agent names one of
//     Pi's folders (piAgentFolder). A session file moved to another folder and
//     resumed there by Pi (pi --session FILE) is stored once per folder under
//     one header; each comes back where it was, and a follower started on the
//     restored root finds each as the session it is;
//   - the folder of the header's cwd (piSessionDir), where Pi looks for it;
//   - else, when the header names no folder (no cwd, "", a relative one, not a
//     string, or one whose folder name would be over 255 bytes: Pi was run with
//     --session-dir), the folder its agent names (piFallbackFolder), which
//     follow names the agent of a folder that is not Pi's, so that such a
//     session also comes back where it was. Pi opens it there by its path.
//
// It fails, wrapping errNotPiPlaceable, only when the header's timestamp and
// id cannot name a file.
func piPlace(h pi.Header, ref transcript.TranscriptRef) (string, error) {
	name, err := piSessionName(h)
	if err != nil {
		return "", fmt.Errorf("%w (the header's timestamp and id name no file): restore it with --layout sessiontree, or export it (transcript export --agent %s --session %s)",
			err, ref.AgentID, ref.SessionID)
	}
	folder, ok := piAgentFolder(ref.AgentID)
	if !ok {
		if folder, err = piSessionDir(h); err != nil {
			folder = piFallbackFolder(ref.AgentID)
		}
	}
	return folder + "/" + name, nil
}

// piFallbackFolder is the folder of Pi's sessions root that restore --layout
// pi gives a session of agent when neither the agent nor the header's cwd
// names one of Pi's folders (see piPlace): the folder 'transcript follow'
// names agent (followedFolder), when it is not hidden, else agent itself (an
// agent id is one file name, never hidden: transcript.ValidatePart).
func piFallbackFolder(agent string) string {
	if folder, ok := followedFolder(agent); ok && !strings.HasPrefix(folder, ".") {
		return folder
	}
	return agent
}

var (
	// windowsAbs matches a Windows drive path (Pi on Windows records one).
	windowsAbs = regexp.MustCompile(`^[A-Za-z]:[\\/]`)
	// piDirReplacer is the replacement of Pi's session folder names.
	piDirReplacer = strings.NewReplacer("/", "-", `\`, "-", ":", "-")
)

// piRestore is one run of restore --layout pi into out. Its sessions are read
// and their files built in scratch first (prepare, --parallel at once), and
// moved into place together once every session is read (place): two sessions
// of the run that belong at one path (piPlace) are found before either is
// written, and both fail instead of racing for the path, where the one written
// last would replace the other's file, or fail as if that file held entries of
// its own.
type piRestore struct {
	out, scratch string
	force        bool

	mu     sync.Mutex
	claims []piClaim
	// folders are the folders of out looked at for local copies of the
	// sessions (localRel), by path.
	folders map[string]*piLocalFolder
}

// piLocalFolder is what a folder of out held before the restore wrote to it:
// the names of its session files by their header's id (scanPiFolder), read
// once however many sessions belong there.
type piLocalFolder struct {
	once sync.Once
	byID map[string][]string
	err  error
}

// piClaim is a session prepared for its path in Pi's layout.
type piClaim struct {
	ref transcript.TranscriptRef
	// rel is where the session belongs, relative to out ("/"-separated).
	rel string
	// tmp is its file, built in scratch, to be moved to rel (outcomeRestored).
	tmp     string
	outcome restoreOutcome
	entries int
	size    int64
	// leftOut are the ids of the entries the file leaves out: those on a
	// parent cycle, which Pi cannot open (leanSession.leaveOutCycles).
	leftOut []string
	// lost are the ids of the entries the store lacks that entries of the
	// file name as their parent (lostParents).
	lost []string
	// err is why the session cannot be restored; it is not placed.
	err error
	// local is what the file at rel looked like when prepare checked it (nil:
	// there was none): place replaces only a file still like that.
	local os.FileInfo
}

// errLocalChanged is wrapped when a local file changed between the check of
// its session and its replacement (Pi wrote to it meanwhile).
var errLocalChanged = errors.New("the local file changed while restore read the bucket (Pi wrote to it?): left as it is; run restore again")

// errPiPathShared is wrapped when sessions of one restore belong at the same
// path of Pi's layout.
var errPiPathShared = errors.New("sessions of the restore belong at one path of Pi's layout")

// prepare reads ref and builds its file in scratch, unless out holds an
// identical one at the session's path, or under another name in its folder
// (localRel: then that file is the one brought up to date), in which case it
// is to be skipped; a different one whose entries the session lacks fails it
// unless force is set.
// A session that has a path is not counted yet: it returns outcomeDeferred and
// place says what became of it. An error is returned only for a session
// without a path (it cannot be read, or its header cannot be placed).
//
// The file is the header first, then every entry in merge order, byte for
// byte, as export writes it, but for the entries that lie on a parent cycle:
// Pi cannot open a file holding them (pi/cycles.go), so they are left out, and
// the claim names them (restore then reports them and exits 1). Its
// modification time is that of its newest entry, so that Pi's continueRecent
// (the newest file) resumes the session Pi would have. The session is read as
// stored and its payloads put back as the file is written (as restoreLean
// does), unless a reference could change what the file holds: the kind of an
// entry (sessiontree.ClassifyStored), a "timestamp" or the header's "cwd"
// (piStoredFields); then, or when a payload turns out not to be a JSON
// string's contents, it is read with its payloads.
func (p *piRestore) prepare(ctx context.Context, s sessiontree.StoreReader, ref transcript.TranscriptRef) (restoreOutcome, int, int64, error) {
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
	c, err := piClaim{}, sessiontree.ErrNotPlain
	if kinds, ok := sessiontree.ClassifyStored(res, piStoredFields...); ok {
		sess := leanSessionOf(res, func(i int) (sessiontree.RawKind, error) { return kinds[i], nil }, nil)
		c, err = p.build(ctx, lr, sess, ref)
	}
	if errors.Is(err, sessiontree.ErrNotPlain) {
		if res, err = lr.ReadLean(ctx, ref); err != nil {
			return 0, 0, 0, err
		}
		boundHeap(res.Size())
		c, err = p.build(ctx, lr, newLeanSession(res, nil), ref)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	p.mu.Lock()
	p.claims = append(p.claims, c)
	p.mu.Unlock()
	return outcomeDeferred, 0, 0, nil
}

// lostParentsLean is lostParents of the entries of res. Only an entry whose
// parent res does not place is parsed.
func lostParentsLean(res *transcript.LeanResult) []string {
	return lostParents(res.Len(), func(i int) (string, string) {
		if _, ok := res.Parent(i); ok {
			return res.ID(i), ""
		}
		e, err := pi.ParseEntry(res.Raw(i))
		if err != nil {
			return res.ID(i), ""
		}
		p, _ := e.ParentID()
		return res.ID(i), p
	})
}

// piStoredFields are the top-level fields beside an entry's kind whose values
// the Pi layout's file depends on: where it goes (the header's cwd and
// timestamp) and its modification time (the entries' timestamps).
var piStoredFields = []string{"timestamp", "cwd"}

// build is prepare of the session sess, its payloads put back by src as the
// file is written (none when sess was read with them). It returns an error
// when the session has no path, or wrapping sessiontree.ErrNotPlain when sess
// must be read with its payloads; any other failure is the claim's.
func (p *piRestore) build(ctx context.Context, src sessiontree.PayloadSource, sess *leanSession, ref transcript.TranscriptRef) (piClaim, error) {
	res := sess.res
	if sess.header < 0 {
		return piClaim{}, fmt.Errorf("%w (or it has no session header)", errSessionNotFound(ref))
	}
	h, err := pi.ParseHeader(res.Raw(sess.header))
	if err != nil {
		return piClaim{}, err
	}
	rel, err := piPlace(h, ref)
	if err != nil {
		return piClaim{}, err
	}
	leftOut := sess.leaveOutCycles()
	c := piClaim{ref: ref, rel: rel, entries: sess.n - len(leftOut), leftOut: leftOut, lost: lostParentsLean(res)}
	local, err := p.localRel(rel, h.ID())
	if err != nil {
		c.err = err
		return c, nil
	}
	c.rel = local
	dest := filepath.Join(p.out, filepath.FromSlash(c.rel))
	tmp, err := os.CreateTemp(p.scratch, "pi-*.jsonl")
	if err != nil {
		c.err = err
		return c, nil
	}
	_ = tmp.Close()
	keep := false
	defer func() {
		if !keep {
			_ = os.Remove(tmp.Name())
		}
	}()
	err = fsutil.WriteFileAtomic(tmp.Name(), false, func(w io.Writer) error { _, err := sess.writeExportResolved(ctx, w, src, ref); return err })
	if errors.Is(err, sessiontree.ErrNotPlain) {
		return piClaim{}, err
	}
	c.err = err
	if c.err == nil {
		c.local, c.err = statLocal(dest)
	}
	if c.err == nil {
		c.outcome, c.err = p.check(tmp.Name(), dest, sess)
	}
	if c.err == nil && c.outcome == outcomeRestored {
		c.err = datePiFile(tmp.Name(), sess, h)
	}
	if c.err == nil && c.outcome == outcomeRestored {
		c.tmp, c.size, keep = tmp.Name(), fileSize(tmp.Name()), true
	}
	return c, nil
}

// errPiLocalCopies is wrapped when several files of a folder of out hold the
// session restore would write there.
var errPiLocalCopies = errors.New("several local files hold the session")

// localRel is the path, relative to out, of the file restore brings up to date
// with the session of header id id whose place is rel (piPlace): the file of
// rel's folder that holds the session (its first line is a header of that id),
// whatever its name (Pi named it after another timestamp, or it was renamed),
// so that restore never writes a second file of a session Pi would list
// twice; rel itself when no file of the folder holds it. Several files holding
// it fail, wrapping errPiLocalCopies: which of them Pi should resume is not
// for restore to guess.
func (p *piRestore) localRel(rel, id string) (string, error) {
	folder, _ := path.Split(rel)
	dir := filepath.Join(p.out, filepath.FromSlash(folder))
	p.mu.Lock()
	if p.folders == nil {
		p.folders = map[string]*piLocalFolder{}
	}
	lf := p.folders[dir]
	if lf == nil {
		lf = &piLocalFolder{}
		p.folders[dir] = lf
	}
	p.mu.Unlock()
	lf.once.Do(func() { lf.byID, lf.err = scanPiFolder(dir) })
	if lf.err != nil {
		return "", lf.err
	}
	switch names := lf.byID[id]; len(names) {
	case 0:
		return rel, nil
	case 1:
		return folder + names[0], nil
	default:
		return "", fmt.Errorf("%w: %s hold session %s in %s (Pi lists it %d times); none of them is written: keep one, then restore again",
			errPiLocalCopies, strings.Join(names, " and "), strconv.Quote(id), dir, len(names))
	}
}

// piHeaderMax bounds the first line read as a session header, as Pi (and the
// follower) bound it.
const piHeaderMax = 1 << 20

// scanPiFolder maps the header id of each session file of dir (a regular file,
// or a link to one, named *.jsonl and not hidden) to its names, in name
// order. Only each file's first line is read. A folder that does not exist
// holds none.
func scanPiFolder(dir string) (map[string][]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look for local copies of sessions: %w", err)
	}
	byID := map[string][]string{}
	for _, e := range ents { // os.ReadDir sorts them by name
		name := e.Name()
		if !strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, ".") {
			continue
		}
		id, ok, err := piFileHeaderID(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("look for local copies of sessions: %w", err)
		}
		if ok {
			byID[id] = append(byID[id], name)
		}
	}
	return byID, nil
}

// piFileHeaderID returns the id of the session header on the first line of
// the file at p, reading that line only (a piece at a time, at most
// piHeaderMax bytes); ok is false when p is no regular file or its first line
// is no header.
func piFileHeaderID(p string) (id string, ok bool, err error) {
	st, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil // a dangling link, or removed meanwhile
	}
	if err != nil || !st.Mode().IsRegular() {
		return "", false, err // never opened: a named pipe would block
	}
	f, err := os.Open(p)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, piHeaderMax), 4096).ReadBytes('\n')
	switch {
	case errors.Is(err, io.EOF) && len(line) == piHeaderMax:
		return "", false, nil // longer than any header
	case err != nil && !errors.Is(err, io.EOF):
		return "", false, err
	}
	h, err := pi.ParseHeader(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		return "", false, nil
	}
	return h.ID(), true, nil
}

// check says whether the file built at tmp is to replace dest (outcomeRestored)
// or dest holds the same bytes (outcomeSkipped); a dest holding entries sess
// lacks is an error wrapping errLocalOnly unless p.force is set.
func (p *piRestore) check(tmp, dest string, sess *leanSession) (restoreOutcome, error) {
	same, err := sameFile(tmp, dest)
	if err != nil {
		return 0, err
	}
	if same {
		return outcomeSkipped, nil
	}
	if !p.force {
		if err := checkNoLocalOnly(dest, sess.has); err != nil {
			return 0, err
		}
	}
	return outcomeRestored, nil
}

// datePiFile gives the file at path Pi's mode and the time of the session's
// newest entry (newestEntryTime).
func datePiFile(path string, sess *leanSession, h pi.Header) error {
	if err := os.Chmod(path, 0o644); err != nil { // as Pi creates its files
		return err
	}
	if t := newestEntryTime(sess, h); !t.IsZero() {
		return os.Chtimes(path, t, t)
	}
	return nil
}

// place moves the files prepare built into place and returns every session it
// prepared, in the order of their paths, with what became of it. Sessions
// that belong at one path all fail (errPiPathShared), and none of them is
// written: which of them Pi should find there is not for restore to guess.
func (p *piRestore) place() []piClaim {
	p.mu.Lock()
	defer p.mu.Unlock()
	claims := p.claims
	sort.Slice(claims, func(i, j int) bool {
		if claims[i].rel != claims[j].rel {
			return claims[i].rel < claims[j].rel
		}
		return claims[i].ref.String() < claims[j].ref.String()
	})
	for i := 0; i < len(claims); {
		j := i + 1
		for j < len(claims) && claims[j].rel == claims[i].rel {
			j++
		}
		group := claims[i:j]
		if len(group) > 1 {
			shared := piPathShared(filepath.Join(p.out, filepath.FromSlash(group[0].rel)), group)
			for k := range group {
				if group[k].tmp != "" {
					_ = os.Remove(group[k].tmp)
				}
				group[k].tmp, group[k].size, group[k].err = "", 0, shared
			}
		} else if c := &group[0]; c.err == nil && c.outcome == outcomeRestored {
			dest := filepath.Join(p.out, filepath.FromSlash(c.rel))
			if c.err = p.unchanged(dest, c.local); c.err != nil {
				_ = os.Remove(c.tmp)
				c.tmp, c.size = "", 0
			} else {
				c.err = moveIntoPlace(c.tmp, dest)
			}
		}
		i = j
	}
	p.claims = nil
	return claims
}

// statLocal is what the file at path looks like: nil when there is none.
func statLocal(path string) (os.FileInfo, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return st, err
}

// unchanged fails, wrapping errLocalChanged, when the file at dest is no
// longer what prepare checked (was, nil for none): written, replaced, created
// or removed meanwhile, as Pi running on the machine may do while the other
// sessions are read. Its entries the check never saw would be lost. With
// force any file is replaced.
func (p *piRestore) unchanged(dest string, was os.FileInfo) error {
	if p.force {
		return nil
	}
	now, err := statLocal(dest)
	if err != nil {
		return err
	}
	same := now == nil && was == nil
	if now != nil && was != nil {
		same = os.SameFile(now, was) && now.Size() == was.Size() && now.ModTime().Equal(was.ModTime())
	}
	if !same {
		return fmt.Errorf("%s: %w", dest, errLocalChanged)
	}
	return nil
}

// piPathShared is the error of the sessions of group, which all belong at dest.
func piPathShared(dest string, group []piClaim) error {
	names := make([]string, len(group))
	for k, c := range group {
		names[k] = c.ref.String()
	}
	all := "all"
	if len(names) == 2 {
		all = "both"
	}
	return fmt.Errorf("%w: %s and %s %s belong at %s (one session header, stored %d times); none of them is restored: restore each alone (--agent A --session S) into a --out of its own",
		errPiPathShared, strings.Join(names[:len(names)-1], ", "), names[len(names)-1], all, dest, len(group))
}

// moveIntoPlace renames the file tmp to dest, creating dest's folder, and
// syncs the folder. A folder on another file system than tmp (a symbolic link
// to a directory on another disk, a folder Pi takes like any other) gets a
// copy of tmp, written beside dest under a hidden name and renamed over it
// (fsutil.WriteFileAtomic), with tmp's mode and time; tmp is removed.
func moveIntoPlace(tmp, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	err := os.Rename(tmp, dest)
	if errors.Is(err, syscall.EXDEV) {
		return copyIntoPlace(tmp, dest)
	}
	if err != nil {
		return err
	}
	return fsutil.SyncDir(filepath.Dir(dest))
}

// copyIntoPlace is moveIntoPlace of tmp to a dest on another file system.
func copyIntoPlace(tmp, dest string) error {
	st, err := os.Stat(tmp)
	if err != nil {
		return err
	}
	src, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer src.Close()
	err = fsutil.WriteFileAtomic(dest, false, func(w io.Writer) error {
		if _, err := io.Copy(w, src); err != nil {
			return err
		}
		f, ok := w.(*os.File)
		if !ok {
			return nil
		}
		if err := f.Chmod(st.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(f.Name(), st.ModTime(), st.ModTime())
	})
	if err != nil {
		return fmt.Errorf("copy to %s (another file system): %w", dest, err)
	}
	return os.Remove(tmp)
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
