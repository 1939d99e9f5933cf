package main

import (
	"bufio"
	"context"
	"fmt"
)

const catUsage = `
Usage: transcript cat [flags]

Prints the entries of the session --agent/--session of --ns, union-merged from all
its segments (a strict session's: those its head commits, as transcript-serve
reads it), as JSONL on stdout (the session header first, parents before
children). Conflicts (one id, two contents) are reported on stderr.

Examples:
  transcript cat --agent coder --session s1
  transcript cat --store file:///var/lib/transcripts --ns acme --agent coder --session s1 | jq .type
`

func runCat(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "cat", catUsage, false)
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	res, ref, err := sf.readLean(ctx, "cat")
	if err != nil {
		return err
	}
	for _, c := range res.Conflicts {
		fmt.Fprintf(env.stderr, "conflict: entry %s differs in %s[%d] (kept) and %s[%d]\n",
			c.ID, c.KeptSegment, c.KeptPos, c.DroppedSegment, c.DroppedPos)
	}
	w := bufio.NewWriterSize(env.stdout, 1<<20)
	if err := res.WriteJSONL(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	lostEntries(env, "cat", ref, res)
	return nil
}
