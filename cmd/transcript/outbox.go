package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript"
)

const outboxUsage = `
Usage: transcript outbox [flags] OUTBOX_DIR

Lists the stuck sessions of a mirror's outbox: sessions whose uploads are held
back because the store refused one of their segments for good. For each: the
session, the segments in the quarantine, the entries held back, since when, and
the error (--json: one object per line). Listing only reads and works while the
replica runs. A directory that does not exist, or holds no outbox, is "not
found" (exit 1); nothing is created.

--release SESSION (namespace/agent/session, as listed) moves the session's
quarantined segments back to pending/, for the next mirror on the outbox to
upload in order. It takes the outbox lock: stop the replica first (a running
process releases with mirror.Mirror.Release instead). Fix the cause first, or
the store refuses the segments again and they return to the quarantine. A
session with no quarantined segments is "not found" (exit 1).

Examples:
  transcript outbox /var/lib/agent/outbox
  transcript outbox --release default/coder/s1 /var/lib/agent/outbox
`

func runOutbox(_ context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "outbox", outboxUsage)
	release := fs.String("release", "", "move this `SESSION`'s quarantined segments (namespace/agent/session) back to pending/")
	asJSON := fs.Bool("json", false, "print the result as JSON (stuck sessions: one object per line)")
	if err := parse(fs, nil, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("outbox takes one OUTBOX_DIR after its flags")
	}
	dir := fs.Arg(0)
	if *release != "" {
		return releaseOutbox(env, dir, *release, *asJSON)
	}
	stuck, err := mirror.InspectOutbox(dir)
	if err != nil {
		return err
	}
	if *asJSON {
		for _, s := range stuck {
			if err := writeJSON(env.stdout, s); err != nil {
				return err
			}
		}
		return nil
	}
	if len(stuck) == 0 {
		_, err := fmt.Fprintln(env.stdout, "no stuck sessions")
		return err
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSEGMENTS\tENTRIES\tSINCE\tERROR")
	for _, s := range stuck {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", cmdcli.Escape(s.Session), s.Segments, s.Entries, s.Since.UTC().Format(time.RFC3339), cmdcli.Escape(s.Error))
	}
	return tw.Flush()
}

// releaseSummary is the result of outbox --release.
type releaseSummary struct {
	Session  string `json:"session"`
	Released int    `json:"released"`
}

// releaseOutbox releases the stuck session named session (namespace/agent/session,
// each a valid id part, else a usage error) of the outbox dir. A session with no
// segments in the quarantine is "not found".
func releaseOutbox(env *cliEnv, dir, session string, asJSON bool) error {
	parts := strings.Split(session, "/")
	if len(parts) != 3 {
		return usagef("outbox: --release %q: want namespace/agent/session, as 'transcript outbox %s' lists it", session, dir)
	}
	for i, name := range []string{"namespace", "agent", "session"} {
		if err := transcript.ValidatePart(name, parts[i]); err != nil {
			return usagef("outbox: --release %q: %v", session, err)
		}
	}
	n, err := mirror.ReleaseOutbox(dir, session)
	if err != nil {
		return err
	}
	if n == 0 {
		return &cmdcli.NotFoundError{What: fmt.Sprintf("stuck session %s in outbox %s", session, dir),
			Hint: "it has no quarantined segments; 'transcript outbox " + dir + "' lists the stuck sessions"}
	}
	if asJSON {
		return writeJSON(env.stdout, releaseSummary{Session: session, Released: n})
	}
	_, err = fmt.Fprintf(env.stdout, "%s\t%s released\n", session, cmdcli.Count(n, "segment"))
	return err
}
