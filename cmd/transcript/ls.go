package main

import (
	"context"
	"fmt"
	"strings"
)

const lsUsage = `
Usage: transcript ls [flags] [NAMESPACE[/AGENT[/SESSION]]]

Lists the namespaces of the store; with NAMESPACE its agents; with NAMESPACE/AGENT
their sessions; with NAMESPACE/AGENT/SESSION the session's segments (key, size).

Examples:
  transcript ls
  transcript ls default/coder
  transcript ls --json acme/coder/6d4c2f18
`

func runLs(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "ls", lsUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("ls takes at most one argument")
	}
	s, err := sf.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()

	var parts []string
	if fs.NArg() == 1 {
		parts = strings.Split(strings.Trim(fs.Arg(0), "/"), "/")
	}
	var names []string
	switch len(parts) {
	case 0:
		names, err = s.ListNamespaces(ctx)
	case 1:
		names, err = s.ListAgents(ctx, parts[0])
	case 2:
		names, err = s.ListSessions(ctx, parts[0], parts[1])
	case 3:
		ref, perr := parseRef(fs.Arg(0), sf.namespace)
		if perr != nil {
			return perr
		}
		segs, err := s.ListSegments(ctx, ref)
		if err != nil {
			return err
		}
		if sf.json {
			return writeJSON(env.stdout, segs)
		}
		for _, seg := range segs {
			fmt.Fprintf(env.stdout, "%s\t%d\n", seg.Key, seg.Size)
		}
		return nil
	default:
		return usagef("ls: want NAMESPACE[/AGENT[/SESSION]]")
	}
	if err != nil {
		return err
	}
	if sf.json {
		if names == nil {
			names = []string{}
		}
		return writeJSON(env.stdout, names)
	}
	for _, n := range names {
		fmt.Fprintln(env.stdout, n)
	}
	return nil
}
