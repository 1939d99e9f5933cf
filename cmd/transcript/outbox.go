package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/transcriptstore/transcript/mirror"
)

const outboxUsage = `
Usage: transcript outbox [flags] OUTBOX_DIR

Lists the stuck sessions of a mirror's outbox: sessions whose uploads are held
back because the store refused one of their segments for good. For each: the
session, the segments in the quarantine, the entries held back, since when, and
the error. Listing only reads and works while the replica runs.

--release SESSION (namespace/agent/session, as listed) moves the session's
quarantined segments back to pending/, for the next mirror on the outbox to
upload in order. It takes the outbox lock: stop the replica first (a running
process releases with mirror.Mirror.Release instead). Fix the cause first, or
the store refuses the segments again and they return to the quarantine.

Examples:
  transcript outbox /var/lib/agent/outbox
  transcript outbox --release default/coder/s1 /var/lib/agent/outbox
`

func runOutbox(_ context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "outbox", outboxUsage)
	release := fs.String("release", "", "move this session's quarantined segments back to pending/")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, nil, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("outbox takes one OUTBOX_DIR after its flags")
	}
	dir := fs.Arg(0)
	if *release != "" {
		n, err := mirror.ReleaseOutbox(dir, *release)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(env.stdout, map[string]any{"session": *release, "released": n})
		}
		_, err = fmt.Fprintf(env.stdout, "%s\t%d segments released\n", *release, n)
		return err
	}
	stuck, err := mirror.InspectOutbox(dir)
	if err != nil {
		return err
	}
	if *asJSON {
		if stuck == nil {
			stuck = []mirror.StuckSession{}
		}
		return writeJSON(env.stdout, stuck)
	}
	if len(stuck) == 0 {
		_, err := fmt.Fprintln(env.stdout, "no stuck sessions")
		return err
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSEGMENTS\tENTRIES\tSINCE\tERROR")
	for _, s := range stuck {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", s.Session, s.Segments, s.Entries, s.Since.UTC().Format(time.RFC3339), s.Error)
	}
	return tw.Flush()
}
