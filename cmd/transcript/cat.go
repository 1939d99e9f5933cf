package main

import (
	"context"
	"fmt"
)

const catUsage = `
Usage: transcript cat [flags] [NAMESPACE/]AGENT/SESSION

Prints the session's entries, union-merged from all its segments, as JSONL on stdout
(parents before children). Conflicts (one id, two contents) are reported on stderr.

Examples:
  transcript cat default/coder/6d4c2f18
  transcript cat --store file:///var/lib/transcripts acme/coder/s1 | jq .type
`

func runCat(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "cat", catUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("cat takes one session")
	}
	s, refs, err := sf.openSessions(ctx, fs.Args())
	if err != nil {
		return err
	}
	defer s.Close()
	ref := refs[0]
	res, err := s.ReadAll(ctx, ref)
	if err != nil {
		return err
	}
	for _, c := range res.Conflicts {
		fmt.Fprintf(env.stderr, "conflict: entry %s differs in %s[%d] (kept) and %s[%d]\n",
			c.ID, c.KeptSegment, c.KeptPos, c.DroppedSegment, c.DroppedPos)
	}
	for _, e := range res.Entries {
		if _, err := fmt.Fprintf(env.stdout, "%s\n", e.Raw); err != nil {
			return err
		}
	}
	return nil
}
