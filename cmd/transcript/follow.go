package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

const followUsage = `
Usage: transcript follow [flags] [ROOT]

Uploads the sessions a running Pi writes, as it writes them: watches ROOT
(default: Pi's sessions root, $PI_CODING_AGENT_DIR/sessions or
~/.pi/agent/sessions) and every directory in it, and uploads each session
file's new complete lines to --store as one segment per burst (the lines
written within --batch of the first). Runs until SIGTERM or SIGINT, then
uploads what it has and exits 0; --once uploads everything complete now and
exits (for cron jobs and tests). Both wait --drain-timeout at most for the
outbox to upload; what is left stays there for the next run (with --once, an
exit 1).

Each session file (NAME.jsonl whose first line is a Pi session header of
version 3) is the session --ns/AGENT/ID: ID is the header's id, AGENT is --agent
or else the name of the directory holding the file (Pi's "--<cwd>--" folder).
A name that is not a valid id is escaped (%XX), and shortened with a hash when
over 128 bytes. Pi files of version 1 or 2 are left until Pi migrates them
(it rewrites them as version 3 when it opens them); 'transcript import' stores
a file nobody will open again. Other files are ignored, reported once.
A symbolic link directly under ROOT to a directory elsewhere is a folder like
a real one, named after the link (as Pi takes it); a link that would walk the
root or another link's directory again is ignored, reported once. A folder
follow may not list (Pi run as another user, say) is reported stuck, as is a
file it may not read: --once then exits 1.

It survives Pi and itself: a torn last line waits for its newline; Pi's repair
of a torn line (a newline appended when it loads the file) is skipped as Pi
skips it; a file rewritten in place is read again, and lines the store holds
(same id and bytes) are never uploaded twice; a file removed locally stays in
the bucket. A session the store lost (its bucket deleted and created again,
its prefix emptied) is uploaded again whole, header first, before the file's
next lines ("rewritten"), with the lines of it still in the outbox, so that
the store's order is the file's: follow asks the store whether it holds the
session with its header (one HEAD of the segment holding it; a listing when
that is gone) before each upload of a file's new lines; lines the outbox
uploaded after a wipe, without the header, do not count. Each follower keeps a
marker object of its own in the store ({ns}/.followers/{id}, looked for with
one HEAD each --rescan): a store that lost it was emptied, and gets every
file's session again ("lost", then "rewritten" per session), even after
another machine's follower filled it first; an emptying takes a while (the
marker may go before the sessions), so for 10 minutes (or 30 --rescan) after a
loss it asks about every file again after one --rescan, two, four and so on.
Sessions deleted on purpose (retention) leave the marker, and come back only
if their files grow; within those 10 minutes, a session last seen with a
retention mark is taken for retention's. A deleted bucket (NoSuchBucket) is
an emptying at once: the outbox's lines are taken back ("lost"), and every
file is uploaded again whole once the bucket is back. The marker's id is random, made at the first start and
kept in --state-dir with the host name, the machine id (hashed) and the
directory's path: a --state-dir copied to another machine (a synchronised
home, a cloned VM image) or moved takes a new id at its next start ("copied"),
so that each copy has its own marker, and asks about every file once. A
--state-dir that does not last (a new one for each --once run, a container
without a volume) makes a new follower each run: it reads every session the
files map to, to reconcile them, and leaves one more marker each run;
--follower-id names one for all runs (give each machine its own; an old marker
can be deleted by hand once its follower is gone), as it does for a container
whose host name changes at each start. The state (bytes uploaded per file and
their checksum) and the outbox (lines handed over, not yet in the bucket) live
in --state-dir: a restart after a crash resumes there, uploading no line twice
and skipping none.

A store that cannot be reached at start (down, unreachable, timing out or
answering 503: a laptop offline at boot) is waited for: follow says so once
("waiting", with the error), tries again after 1s, 2s, 4s... and every 30s at
most, and starts following when it answers ("ready"); Pi's files keep what it
writes meanwhile. SIGTERM while waiting exits 0 at once. A missing bucket,
refused credentials or a bad URL fail at once, and so does --once. Once
running, follow rides out outages in its outbox.

On a terminal it prints a line per upload; --json prints every event as a JSON
object per line (and a last "summary" object). Warnings go to stderr. With
--metrics-addr it serves Prometheus metrics on /metrics: lines read, entries
and segments uploaded, lag, stuck files, and the outbox's uploads.

Exit codes: 0 ok (also after SIGTERM); 1 a failure, or with --once a file that
could not be uploaded, segments left in the outbox, or a ROOT that does not
exist; 2 usage.

Examples:
  transcript follow --store 's3://transcripts/prod?endpoint=minio:9000' --ns alice
  transcript follow --once --json --store file:///mnt/bucket-copy ~/.pi/agent/sessions
  transcript follow --state-dir /var/lib/transcript-follow --metrics-addr 127.0.0.1:9464
`

// followEvent is follow --json's object: one per event, and a last "summary".
type followEvent struct {
	Event   string `json:"event"`
	Time    string `json:"time"`
	File    string `json:"file,omitempty"`
	Session string `json:"session,omitempty"`
	Lines   int    `json:"lines,omitempty"`
	Entries int    `json:"entries,omitempty"`
	Stored  int    `json:"stored,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	Offset  int64  `json:"offset,omitempty"`
	Message string `json:"message,omitempty"`
	// The summary's figures.
	Following int   `json:"following,omitempty"`
	Segments  int   `json:"segments,omitempty"`
	Stuck     int   `json:"stuck,omitempty"`
	Pending   int   `json:"pending,omitempty"`
	LagBytes  int64 `json:"lagBytes,omitempty"`
}

// followOptions are follow's own flags.
type followOptions struct {
	stateDir, writer, metricsAddr    string
	followerID                       string
	batch, rescan, stuckAfter, drain time.Duration
	once, noWatch                    bool
	workers                          int
}

func runFollow(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "follow", followUsage, true)
	var o followOptions
	fs.StringVar(&o.stateDir, "state-dir", "", "`DIR` of the state file and the outbox (default $XDG_STATE_HOME/transcript/follow or ~/.local/state/transcript/follow)")
	fs.DurationVar(&o.batch, "batch", follow.DefaultBatchInterval, "gather the lines of a burst this long before uploading them as one segment")
	fs.DurationVar(&o.rescan, "rescan", follow.DefaultRescanInterval, "walk ROOT this often, to catch what the watch missed")
	fs.DurationVar(&o.stuckAfter, "stuck-after", follow.DefaultStuckAfter, "report a file stuck when its last line stays unterminated, or its uploads fail, this long")
	fs.DurationVar(&o.drain, "drain-timeout", follow.DefaultDrainTimeout, "at exit, upload for this long at most (what is left stays in the outbox, for the next start)")
	fs.BoolVar(&o.once, "once", false, "upload everything complete now and exit")
	fs.BoolVar(&o.noWatch, "no-watch", false, "find changes by the rescan alone (file systems without inotify)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on `HOST:PORT`/metrics")
	fs.StringVar(&o.writer, "writer", "", "writer id in the segment keys (default: host name and random hex)")
	fs.StringVar(&o.followerID, "follower-id", "", "`ID` of this follower's marker in the store (default: random, kept in --state-dir); for a --state-dir that does not last, so that its runs share one marker")
	fs.IntVar(&o.workers, "workers", 0, "concurrent uploads to the store (default 4; more where many sessions are written at once)")
	fs.Lookup("agent").Usage = "agent `ID` of every session (default: the name of the folder holding each file)"
	_ = fs.MarkHidden("session") // each file names its session
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("follow takes at most one ROOT after its flags")
	}
	if sf.Session != "" {
		return usagef("follow: --session is not a flag of follow: each file names its session (its header's id)")
	}
	if o.followerID == "" && fs.Changed("follower-id") {
		// An empty id would quietly mean a random one: a fleet whose
		// templating left the id out would then get one marker per run.
		return usagef("follow: --follower-id is empty: give an id, or leave the flag out for a random one kept in --state-dir")
	}
	if o.followerID != "" {
		if err := transcript.ValidateWriterID(o.followerID); err != nil {
			return usagef("follow: --follower-id: %v", err)
		}
	}
	if o.batch <= 0 || o.rescan <= 0 || o.stuckAfter <= 0 || o.drain <= 0 || o.workers < 0 {
		return usagef("follow: --batch, --rescan, --stuck-after and --drain-timeout must be positive, --workers not negative")
	}
	root := fs.Arg(0)
	if root == "" {
		var err error
		if root, err = follow.DefaultRoot(env.getenv); err != nil {
			return err
		}
	}
	if o.stateDir == "" {
		var err error
		if o.stateDir, err = defaultStateDir(env.getenv); err != nil {
			return err
		}
	}
	if o.once {
		if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
			return notFound("sessions root %s", root)
		}
	}
	w, err := newWriter(o.writer)
	if err != nil {
		return err
	}
	return followRoot(ctx, env, sf, o, root, w)
}

// defaultStateDir is $XDG_STATE_HOME/transcript/follow, or
// ~/.local/state/transcript/follow.
func defaultStateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "transcript", "follow"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("follow: %w (name --state-dir)", err)
	}
	return filepath.Join(home, ".local", "state", "transcript", "follow"), nil
}
