package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/schollz/progressbar/v3"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const restoreUsage = `
Usage: transcript restore --out DIR [flags]

Disaster recovery: rebuilds the local files of every session of --ns (only those of
--agent, or the one --session, when given) from the bucket alone, in the SessionTree
layout (--layout sessiontree, the default):

  DIR/{namespace}/agents/{agent}/sessions/{session}.jsonl      context file
  DIR/{namespace}/agents/{agent}/sessions/{session}.log.jsonl  log file

or, with --layout pi, in Pi's own layout, DIR being Pi's sessions root (for
example ~/.pi/agent/sessions), so that Pi lists and resumes them:

  DIR/--{cwd}--/{timestamp}_{id}.jsonl   the header's cwd, timestamp and id, as Pi names them

each the header first, then every entry byte for byte (as export writes it), with
the time of its newest entry as its modification time (Pi's continueRecent takes
the newest file). What 'transcript follow' uploaded comes back as Pi wrote it,
in the folder it was in: a session whose agent is one of Pi's folders (--...--)
goes into that folder even when its header's cwd names another (a file Pi
resumed in another folder is stored once per folder under one header, and each
comes back where it was). A header that names no folder of Pi's (no cwd, a relative
one, or one whose folder name would be over 255 bytes) goes into the folder its agent
names ({agent}/, as follow names a folder; Pi opens it by its path); one whose
timestamp and id name no file fails: restore it with --layout sessiontree. Sessions of one run that would still share a path
(one header, stored under two agents, at least one not a
folder of Pi's) all fail, naming
each other and the path, and none of them is written; restore each alone
(--agent, --session) into a --out of its own. The Pi layout's files are moved
into place once every session is read (none, when the run is interrupted).
Entries whose parentIds form a cycle (stored by a buggy or hostile writer) are
left out of a Pi layout's file, since Pi cannot open a file holding them (it
hangs or crashes); their descendants stay. Restore names them on stderr (and
under "leftOut" with --json), writes the rest, and exits 1.

A session whose entries name a parent that no segment holds (a segment lost,
or left out of a copy of the bucket: an interrupted rclone) is written as the
store holds it, in either layout; restore names those parents the same way,
on every run, as a warning: a session can be written so (Pi 0.58's
createBranchedSession leaves the children of the labels it drops without
their parent), and nothing in the bucket tells the two apart. transcript
verify reports them as problems.

A strict session (one transcript-serve created) is restored as its head commits
it, as the server reads it: a segment no head commits is not part of it.

An object named exactly like the key prefix of an agent or a session (an S3
tool's copy of a file to acme/coder/s1) hides the sessions under that prefix
from MinIO's listings: restore cannot see them. Without --session it looks for
such objects while it restores the rest, names each ("hidden", and under
"hidden" with --json), and exits 1; move or delete the object and run again.

Files are built in a hidden scratch directory of DIR (.restore-*), removed when
the run ends; one left by a run that was killed (kill -9, a crash) is removed by
the next run into DIR, and one a running restore holds (flock) is left alone.

Sessions are restored --parallel at once (and up to --parallel + 1 more are
fetched ahead of their turn), with a progress bar when stderr is a terminal. It is resumable: a session whose files exist and are identical to what the
bucket holds is skipped; files that differ are replaced, unless their log holds
entries the bucket lacks (then the session fails; --force replaces them anyway).
Beside the two files, {session}.segments names the segments they hold (and
{session}.origins where each entry was first stored); restore stamps each file
with a checksum of its bytes (the nanoseconds of its modification time): while
both files bear their stamps, a later run fetches only the segments they lack
and appends their entries (a session with none is skipped; a strict session, only
while its head names every segment they hold, else it is read whole; and a session
whose store no longer lists a segment they hold, unless a new compacted segment
does, is read whole too, so files holding entries a damaged copy of the bucket
lacks fail as above); files changed in any
way (lines swapped, say) are rebuilt whole, and skipped only if then identical,
byte for byte. The Pi
layout is rebuilt whole, and a file identical to what the bucket holds is skipped.
Prints the failures and a summary (--json: a JSON object) on stdout.

Examples:
  transcript restore --out ./restored
  transcript restore --store file:///mnt/bucket-copy --ns acme --out /var/lib/agents --parallel 16 --json
  transcript restore --layout pi --out ~/.pi/agent/sessions --store 's3://transcripts/prod?endpoint=minio:9000'
`

// restoreSummary is restore's result.
type restoreSummary struct {
	Out      string           `json:"out"`
	Sessions int              `json:"sessions"`
	Restored int              `json:"restored"`
	Skipped  int              `json:"skipped"`
	Failed   int              `json:"failed"`
	Entries  int              `json:"entries"`
	Bytes    int64            `json:"bytes"`
	Seconds  float64          `json:"seconds"`
	Failures []restoreFailure `json:"failures"`
	// LeftOut names the sessions written without some of their entries
	// (--layout pi: those on a parent cycle); the run exits 1.
	LeftOut []restoreLeftOut `json:"leftOut,omitempty"`
	// Interrupted is set when the run was cancelled (Ctrl-C, SIGTERM) before every
	// session was done; the counts say how far it got.
	Interrupted bool `json:"interrupted,omitempty"`
	// Hidden names the objects, named like the key prefix of an agent or a
	// session selected, that hide the sessions under that prefix from the
	// listing (MinIO): those sessions are not restored, and the run exits 1.
	Hidden []string `json:"hidden,omitempty"`
}

// restoreFailure names a session restore could not restore.
type restoreFailure struct {
	Session string `json:"session"`
	Error   string `json:"error"`
}

// restoreLeftOut names a session restore wrote without some of its entries.
type restoreLeftOut struct {
	Session string `json:"session"`
	// File is the file written, without the entries.
	File string `json:"file"`
	// Entries are the ids of the entries left out, in merge order.
	Entries []string `json:"entries"`
	Reason  string   `json:"reason"`
}

// whyCycle is why restore --layout pi leaves entries out of a session's file.
const whyCycle = "their parentIds form a cycle; Pi cannot open a file holding them"

// whyLost is why restore names entries the store does not hold: other entries
// name them as their parent, so a segment that held them is gone (lost, or
// left out of a copy of the bucket). The files hold the rest.
const whyLost = "entries of the session name them as their parent, but no segment of the store holds them: " +
	"a segment is missing (lost, or not copied), or the session was written so; the rest is written (run transcript verify)"

// restoreOutcome is what happened to one session.
type restoreOutcome int

const (
	outcomeRestored restoreOutcome = iota
	outcomeSkipped
	// outcomeDeferred: the session is prepared and a later step of the run
	// says what became of it (piRestore.place).
	outcomeDeferred
)

func runRestore(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "restore", restoreUsage, true)
	out := fs.String("out", "", "directory to restore into (required)")
	parallel := fs.Int("parallel", cmdcli.DefaultParallel, "sessions restored at once")
	force := fs.Bool("force", false, "replace local files even when their log holds entries the bucket lacks")
	layout := fs.String("layout", layoutSessionTree, "the files to write: sessiontree (a SessionTree's context and log files) or pi (Pi's own session files)")
	start := time.Now()
	s, refs, err := sf.parseSelection(ctx, fs, args, parallel, func() error {
		if *out == "" {
			return usagef("restore needs --out DIR")
		}
		if *layout != layoutSessionTree && *layout != layoutPi {
			return usagef("restore: --layout %q: want %s or %s", *layout, layoutSessionTree, layoutPi)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.Close()
	if len(refs) == 1 {
		tightenGC(oneSessionGCPercent)
	}
	// Sessions the listing cannot show are looked for while the others are
	// restored (see hidingObjects).
	hidden := hidingLater(ctx, s, sf)
	defer hidden()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	// One scratch directory for the run (sessions have distinct paths in it): a
	// session's files are written there and then moved into place. Those of
	// earlier runs killed before they could remove theirs go first.
	scratch, doneScratch, err := newScratch(*out)
	if err != nil {
		return err
	}
	defer doneScratch()

	var bar *progressbar.ProgressBar
	if !sf.json && isTerminal(env.stderr) {
		bar = progressbar.NewOptions(len(refs),
			progressbar.OptionSetWriter(env.stderr),
			progressbar.OptionSetDescription("restoring"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("sessions"),
			progressbar.OptionShowIts(),
			progressbar.OptionClearOnFinish(),
		)
	}
	sum := restoreSummary{Out: *out, Sessions: len(refs), Failures: []restoreFailure{}}
	var mu sync.Mutex
	restoreOne := func(ctx context.Context, r sessiontree.StoreReader, ref transcript.TranscriptRef) (restoreOutcome, int, int64, error) {
		outcome, entries, n, scan, err := restoreSessionLost(ctx, r, ref, *out, scratch, *force)
		if err != nil {
			return outcome, entries, n, err
		}
		// What the files hold is what the store holds: entries they lack that
		// others name as their parent are the store's loss, said every run
		// (found in the read when the session was read whole, else in the
		// files a catch-up extended).
		log := sessiontree.FilesOf(*out, ref).Log
		lost := scan.ids
		if !scan.read {
			lost, err = lostParentsOfFile(log)
		}
		if len(lost) > 0 {
			mu.Lock()
			sum.LeftOut = append(sum.LeftOut, restoreLeftOut{Session: ref.String(), File: log, Entries: lost, Reason: whyLost})
			mu.Unlock()
		}
		return outcome, entries, n, err
	}
	prefetch := sessionTreePrefetch(*out)
	var piRun *piRestore
	if *layout == layoutPi {
		piRun = &piRestore{out: *out, scratch: scratch, force: *force}
		restoreOne, prefetch = piRun.prepare, func(transcript.TranscriptRef) bool { return true }
	}
	err = forEachListedSession(ctx, s, *parallel, refs, sf.Agent, prefetch, func(ctx context.Context, ref transcript.TranscriptRef, r sessiontree.StoreReader) error {
		outcome, entries, n, err := restoreOne(ctx, r, ref)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		absent := errors.Is(err, bucket.ErrNotFound) && sf.notASession(ctx, s, ref)
		mu.Lock()
		defer mu.Unlock()
		if absent {
			sum.Sessions-- // only directory markers: nothing to restore, nothing failed
		} else {
			sum.add(ref, outcome, entries, n, err)
		}
		if bar != nil {
			_ = bar.Add(1)
		}
		return nil
	})
	if bar != nil {
		_ = bar.Finish()
	}
	// A store that fails the listing (it stopped answering, or refused) ends
	// the run as an interruption does: the sessions restored so far are in
	// place, the others were never seen, and the summary says how far it got.
	if piRun != nil && err == nil {
		// Interrupted, nothing is placed: which sessions share a path is known
		// only once all are read (the Pi layout is rebuilt whole anyway).
		for _, c := range piRun.place() {
			sum.add(c.ref, c.outcome, c.entries, c.size, c.err)
			file := filepath.Join(*out, filepath.FromSlash(c.rel))
			if c.err == nil && len(c.leftOut) > 0 {
				sum.LeftOut = append(sum.LeftOut, restoreLeftOut{Session: c.ref.String(), File: file, Entries: c.leftOut, Reason: whyCycle})
			}
			if c.err == nil && len(c.lost) > 0 {
				sum.LeftOut = append(sum.LeftOut, restoreLeftOut{Session: c.ref.String(), File: file, Entries: c.lost, Reason: whyLost})
			}
		}
	}
	sum.Interrupted = err != nil
	sort.SliceStable(sum.LeftOut, func(i, j int) bool { return sum.LeftOut[i].Session < sum.LeftOut[j].Session })
	sum.Hidden = hidden()
	sum.Seconds = time.Since(start).Seconds()
	if err := sum.print(env, sf.json); err != nil {
		return err
	}
	if sum.Interrupted {
		return fmt.Errorf("restore interrupted after %d of %d sessions: %w", sum.Restored+sum.Skipped+sum.Failed, sum.Sessions, err)
	}
	leftOut := slices.ContainsFunc(sum.LeftOut, func(l restoreLeftOut) bool { return l.Reason != whyLost })
	if sum.Failed > 0 || leftOut || len(sum.Hidden) > 0 {
		return errProblems // a session written without some entries, or not at all: the restore is not whole
	}
	return nil
}

// add counts a session restore is done with: its outcome (nothing yet when
// deferred), or its error.
func (sum *restoreSummary) add(ref transcript.TranscriptRef, outcome restoreOutcome, entries int, n int64, err error) {
	switch {
	case err != nil:
		sum.Failed++
		sum.Failures = append(sum.Failures, restoreFailure{Session: ref.String(), Error: err.Error()})
		return
	case outcome == outcomeDeferred:
		return
	case outcome == outcomeSkipped:
		sum.Skipped++
	default:
		sum.Restored++
		sum.Bytes += n
	}
	sum.Entries += entries
}

// print writes the summary: the failures and a line, or one JSON object; and
// on stderr a line per session written without some of its entries.
func (sum restoreSummary) print(env *cliEnv, asJSON bool) error {
	for _, l := range sum.LeftOut {
		var ids []string
		for _, id := range l.Entries[:min(len(l.Entries), 10)] {
			ids = append(ids, strconv.Quote(id)) // a hostile id may hold a line break
		}
		if len(l.Entries) > 10 {
			ids = append(ids, fmt.Sprintf("and %d more", len(l.Entries)-10))
		}
		fmt.Fprintf(env.stderr, "restore: %s: %s left out of %s (%s): %s\n",
			l.Session, cmdcli.Count(len(l.Entries), "entry"), l.File, strings.Join(ids, ", "), l.Reason)
	}
	if asJSON {
		return writeJSON(env.stdout, sum)
	}
	for _, f := range sum.Failures {
		fmt.Fprintf(env.stdout, "failed %s: %s\n", f.Session, f.Error)
	}
	for _, k := range sum.Hidden {
		fmt.Fprintf(env.stdout, "hidden %s: %s\n", cmdcli.Escape(k), cmdcli.HidingHint([]string{k}))
	}
	if sum.Interrupted {
		fmt.Fprint(env.stdout, "interrupted: ")
	}
	_, err := fmt.Fprintf(env.stdout, "restored %d, skipped %d (identical), failed %d of %s (%s, not counting session headers) into %s in %.2fs\n",
		sum.Restored, sum.Skipped, sum.Failed, cmdcli.Count(sum.Sessions, "session"), cmdcli.Count(sum.Entries, "entry"), sum.Out, sum.Seconds)
	return err
}

// restoreSession rebuilds ref's two files under scratch, a directory on the
// filesystem of out, then skips them if the destination under out holds
// identical files, or moves them into place (log first, context last). It
// returns the entry count and the bytes written.
func restoreSession(ctx context.Context, s sessiontree.StoreReader, ref transcript.TranscriptRef, out, scratch string, force bool) (restoreOutcome, int, int64, error) {
	outcome, entries, n, _, err := restoreSessionLost(ctx, s, ref, out, scratch, force)
	return outcome, entries, n, err
}

// restoreSessionLost is restoreSession that also returns the parents that
// entries of the session name and no segment holds (lostParents), when it read
// the session whole; after a catch-up of files that held most of it already
// (restoreIncremental), lost is nil and read is false: the files must be
// scanned for them.
func restoreSessionLost(ctx context.Context, s sessiontree.StoreReader, ref transcript.TranscriptRef, out, scratch string,
	force bool) (outcome restoreOutcome, entries int, n int64, lost lostScan, err error) {
	if outcome, entries, n, ok, err := restoreIncremental(ctx, s, ref, out); ok || err != nil {
		return outcome, entries, n, lostScan{}, err
	}
	r, err := restoreLean(ctx, s, ref, scratch)
	lost = lostScan{ids: r.lost, read: true}
	// What is not moved into place leaves scratch now, not at the end of the run.
	moved := false
	defer func() {
		if !moved {
			for _, p := range []string{r.files.Log, r.files.Context, r.files.Origins, r.files.Segments} {
				if p != "" {
					_ = os.Remove(p)
				}
			}
		}
	}()
	if err != nil {
		return 0, 0, 0, lost, err
	}
	dest := sessiontree.FilesOf(out, ref)
	files := []struct{ from, to string }{
		{r.files.Log, dest.Log},
		{r.files.Context, dest.Context},
	}
	identical := true
	var size int64
	for _, f := range files {
		size += fileSize(f.from)
		same, err := sameFile(f.from, f.to)
		if err != nil {
			return 0, 0, 0, lost, err
		}
		identical = identical && same
	}
	if identical {
		if err := moveStoredSet(r.files, dest); err != nil {
			return 0, 0, 0, lost, err
		}
		if err := dropUnsent(dest); err != nil {
			return 0, 0, 0, lost, err
		}
		return outcomeSkipped, r.entries, 0, lost, stampFiles(dest)
	}
	if !force {
		if err := checkNoLocalOnly(files[0].to, r.has); err != nil {
			return 0, 0, 0, lost, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dest.Context), 0o755); err != nil {
		return 0, 0, 0, lost, err
	}
	if err := os.Remove(dest.Segments); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, 0, 0, lost, err
	}
	if err := dropUnsent(dest); err != nil {
		return 0, 0, 0, lost, err
	}
	moved = true
	for _, f := range files {
		if err := os.Rename(f.from, f.to); err != nil {
			return 0, 0, 0, lost, err
		}
	}
	if err := moveStoredSet(r.files, dest); err != nil {
		return 0, 0, 0, lost, err
	}
	return outcomeRestored, r.entries, size, lost, stampFiles(dest)
}

// lostScan is what a restore found of the parents no segment holds: ids,
// when read says it read the session whole.
type lostScan struct {
	ids  []string
	read bool
}

// lostParents returns the parentIds that entries name and no entry of entries
// holds, each once, in the order first named: entries of the session that a
// missing segment held.
func lostParents(n int, at func(i int) (id, parentID string)) []string {
	ids := make(map[string]bool, n)
	for i := range n {
		id, _ := at(i)
		ids[id] = true
	}
	var lost []string
	for i := range n {
		if _, p := at(i); p != "" && !ids[p] {
			ids[p] = true // named once
			lost = append(lost, p)
		}
	}
	return lost
}

// lostParentsOfFile is lostParents of the entries of the session file at path.
func lostParentsOfFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, entries, _, err := sessiontree.ParseSession(f)
	if err != nil {
		return nil, fmt.Errorf("read the restored log %s: %w", path, err)
	}
	// The header is at 0: an entry may name it as its parent.
	return lostParents(1+len(entries), func(i int) (string, string) {
		if i == 0 {
			return h.ID(), ""
		}
		p, _ := entries[i-1].ParentID()
		return entries[i-1].ID(), p
	}), nil
}

// dropUnsent removes the unsent file of the session files f (a replica's
// record of entries its local files hold and the store was not handed): files
// restore leaves hold what the bucket holds, so nothing of them is unsent, and
// a record left beside them would make the next Load hand over what it names
// again. The files it was written for are either replaced (--force gives up
// what only they held) or held nothing the bucket lacks (checkNoLocalOnly).
func dropUnsent(f sessiontree.Files) error {
	if err := os.Remove(f.Unsent); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the unsent record of the replaced files: %w", err)
	}
	return nil
}

// moveStoredSet moves the origins file and then the segments file of from into
// place: the segments file goes last, as it says the files hold those segments
// and names the origins file's bytes.
func moveStoredSet(from, to sessiontree.Files) error {
	if err := moveIfExists(from.Origins, to.Origins); err != nil {
		return err
	}
	return moveIfExists(from.Segments, to.Segments)
}

// moveIfExists renames from to to; a missing from is not an error.
func moveIfExists(from, to string) error {
	if err := os.Rename(from, to); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// restoreIncremental brings the files of ref under out up to date by fetching only
// the segments they do not hold, when they bear the stamp restore left on them
// (filesStamped: their bytes are those it wrote) and a segments file beside them
// says which segments they hold and was written for them (ok is false otherwise:
// restore then rebuilds the session, and calls it identical only if its files
// hold the same bytes). It reports the session skipped when nothing was new.
func restoreIncremental(ctx context.Context, s sessiontree.StoreReader, ref transcript.TranscriptRef, out string) (outcome restoreOutcome, entries int, n int64, ok bool, err error) {
	dest := sessiontree.FilesOf(out, ref)
	if !filesStamped(dest) {
		return 0, 0, 0, false, nil
	}
	who := sessiontree.Identity{Namespace: ref.Namespace}
	tree, rep, err := sessiontree.Load(ctx, sessiontree.Config{Root: out, Store: heldWatch{s}}, who, ref.AgentID, ref.SessionID)
	if err != nil || !rep.Clean() || !tree.SegmentsFileCurrent() || tree.HeldSegments() == 0 {
		return 0, 0, 0, false, nil
	}
	before, stamped := fileSize(tree.LogPath())+fileSize(tree.ContextPath()), modTimes(dest)
	pulled, err := tree.Pull(ctx)
	if errors.Is(err, errHeldUnnamed) || errors.Is(err, errHeldGone) {
		// A strict session the files may hold more of, or segments the files
		// hold that the store may have lost: rebuilt, and compared whole.
		return 0, 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, 0, true, err
	}
	if err := tree.Flush(ctx); err != nil {
		return 0, 0, 0, true, err
	}
	if _, err := tree.MergeLog(ctx); err != nil {
		return 0, 0, 0, true, err
	}
	if now := modTimes(dest); !now[0].Equal(stamped[0]) || !now[1].Equal(stamped[1]) {
		if err := stampFiles(dest); err != nil {
			return 0, 0, 0, true, err
		}
	}
	if pulled.Added == 0 {
		return outcomeSkipped, tree.Len(), 0, true, nil
	}
	return outcomeRestored, tree.Len(), fileSize(tree.LogPath()) + fileSize(tree.ContextPath()) - before, true, nil
}

// errHeldGone is wrapped by heldWatch.ReadNew when segments the reader holds
// are gone from the store and no new compacted segment can account for them.
var errHeldGone = errors.New("segments the files hold are gone from the store")

// heldWatch is the store reader of an incremental restore. A segment the files
// hold that a whole listing no longer shows was either merged into a compacted
// segment and deleted (the compacted segment then shows up as new, unless an
// earlier run already saw it) or lost: a copy of the bucket that left it out.
// Pulled as they are, the files would keep the segment's entries and be called
// identical to a store that lacks them. So, unless a new compacted segment is
// listed, ReadNew refuses (errHeldGone) before the files or their segments
// file change, and restore compares the files with the session read whole:
// identical ones are skipped, and ones holding entries the store lacks fail
// (errLocalOnly), as they do in a first run.
type heldWatch struct{ sessiontree.StoreReader }

// ReadNew is the store's ReadNew, refusing as heldWatch says.
func (w heldWatch) ReadNew(ctx context.Context, ref transcript.TranscriptRef, have transcript.SegmentSet) (*transcript.Increment, error) {
	inc, err := w.StoreReader.ReadNew(ctx, ref, have)
	if err != nil || inc == nil || !inc.Full {
		return inc, err
	}
	gone := ""
	for _, k := range have.Keys() {
		if !inc.Have.Has(k) {
			gone = k
			break
		}
	}
	if gone == "" {
		return inc, nil
	}
	for _, k := range inc.Have.Keys() {
		if !have.Has(k) && !strings.HasPrefix(segmentRel(k), "L0/") {
			return inc, nil // a compaction's output, new to the files: its inputs were deleted
		}
	}
	return nil, fmt.Errorf("read %s: %w: %s", ref, errHeldGone, gone)
}

// The content stamp. Restore leaves the log and the context file of a session
// stamped: the nanoseconds of each file's modification time are the xxhash64 of
// its bytes modulo 1e9 (the seconds are the time it was stamped). A later run
// takes the files as it left them, and fetches only the segments they lack,
// only while both stamps match their bytes: a change of the files that keeps
// their sizes (two lines swapped, say) is then seen as one, even when the
// modification time is put back. A file system that keeps no nanoseconds never
// matches (every run reads each session whole, as the first did). The stamp
// needs no file beside the session's and is lost by any write.

// contentStamp is the nanoseconds of the stamp of the file at path: the
// xxhash64 of its bytes, read once in pieces, modulo 1e9.
func contentStamp(path string) (int, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	h := xxhash.New()
	if _, err := io.Copy(h, file); err != nil {
		return 0, fmt.Errorf("checksum %s: %w", path, err)
	}
	return int(h.Sum64() % 1e9), nil
}

// stampFiles stamps the log and the context file of f (see contentStamp).
func stampFiles(f sessiontree.Files) error {
	now := time.Now().Unix()
	for _, path := range []string{f.Log, f.Context} {
		ns, err := contentStamp(path)
		if err != nil {
			return err
		}
		t := time.Unix(now, int64(ns))
		if err := os.Chtimes(path, t, t); err != nil {
			return fmt.Errorf("stamp %s: %w", path, err)
		}
	}
	return nil
}

// filesStamped reports whether the log and the context file of f bear the
// stamp of their bytes (see contentStamp); false when one cannot be read.
func filesStamped(f sessiontree.Files) bool {
	for _, path := range []string{f.Log, f.Context} {
		st, err := os.Stat(path)
		if err != nil {
			return false
		}
		ns, err := contentStamp(path)
		if err != nil || st.ModTime().Nanosecond() != ns {
			return false
		}
	}
	return true
}

// modTimes returns the modification times of the log and the context file of
// f (zero for one that cannot be read).
func modTimes(f sessiontree.Files) [2]time.Time {
	var ts [2]time.Time
	for i, path := range []string{f.Log, f.Context} {
		if st, err := os.Stat(path); err == nil {
			ts[i] = st.ModTime()
		}
	}
	return ts
}

// fileSize returns the size of the file at path, 0 if it cannot be read.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// errLocalOnly is wrapped when a local log holds entries the bucket lacks.
var errLocalOnly = errors.New("local log holds entries the bucket lacks")

// checkNoLocalOnly fails when the log file at path exists and holds an entry
// that has reports missing from the restored session (restore would lose it).
func checkNoLocalOnly(path string, has func(id string) bool) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, entries, _, err := sessiontree.ParseSession(f)
	if err != nil {
		return nil // not a session file we could lose anything from
	}
	for _, e := range entries {
		if !has(e.ID()) {
			return fmt.Errorf("%s: entry %s: %w (use --force to replace it)", path, e.ID(), errLocalOnly)
		}
	}
	return nil
}

// sessionTreePrefetch says which sessions a restore into out in the SessionTree
// layout reads whole: those without a context file under out.
func sessionTreePrefetch(out string) func(ref transcript.TranscriptRef) bool {
	return func(ref transcript.TranscriptRef) bool {
		_, err := os.Stat(sessiontree.FilesOf(out, ref).Context)
		return errors.Is(err, os.ErrNotExist)
	}
}

// forEachListedSession runs fn for every session of refs, parallel at a time, with
// a reader of the session (a sessionReader: a strict session as its head commits
// it) that uses one recursive listing of the namespace (of agent, when set)
// instead of a listing per session (Store.ForEachListedSession); a session of
// refs that the listing did not show is listed on its own.
// When wholly is set, the sessions of refs it says are read whole are fetched
// ahead (Store.ForEachListedSessionAhead).
func forEachListedSession(ctx context.Context, s *transcript.Store, parallel int, refs []transcript.TranscriptRef, agent string,
	wholly func(ref transcript.TranscriptRef) bool,
	fn func(ctx context.Context, ref transcript.TranscriptRef, r sessiontree.StoreReader) error) error {
	if len(refs) == 0 {
		return nil
	}
	if len(refs) == 1 { // its own listing is smaller than the namespace's
		return fn(ctx, refs[0], newSessionReader(s, refs[0]))
	}
	var mu sync.Mutex
	want := make(map[transcript.TranscriptRef]bool, len(refs))
	for _, r := range refs {
		want[r] = true
	}
	var prefetch func(ref transcript.TranscriptRef) bool
	if wholly != nil {
		prefetch = func(ref transcript.TranscriptRef) bool {
			mu.Lock()
			ok := want[ref]
			mu.Unlock()
			return ok && wholly(ref)
		}
	}
	err := s.ForEachListedSessionAhead(ctx, refs[0].Namespace, agent, parallel, prefetch, func(ctx context.Context, l *transcript.Listed) error {
		mu.Lock()
		ok := want[l.Ref()]
		delete(want, l.Ref())
		mu.Unlock()
		if !ok {
			return nil
		}
		return fn(ctx, l.Ref(), listedSessionReader(l))
	})
	if err != nil {
		return err
	}
	var rest []transcript.TranscriptRef
	for _, r := range refs {
		if want[r] {
			rest = append(rest, r)
		}
	}
	return forEachSession(ctx, parallel, rest, func(ctx context.Context, _ int, ref transcript.TranscriptRef) error {
		return fn(ctx, ref, newSessionReader(s, ref))
	})
}
