package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/transcriptstore/transcript/transcript"
)

const statsUsage = `
Usage: transcript stats [flags]

Counts the namespaces, agents, sessions and segments of the store (or of the bound
namespace) and their bytes, with segments per level. Reads only listings.

Examples:
  transcript stats
  transcript stats --json --store 's3://transcripts?endpoint=127.0.0.1:9000&insecure=true'
`

// storeStats is stats' result.
type storeStats struct {
	Namespaces int            `json:"namespaces"`
	Agents     int            `json:"agents"`
	Sessions   int            `json:"sessions"`
	Segments   int            `json:"segments"`
	Bytes      int64          `json:"bytes"`
	PerLevel   map[string]int `json:"segmentsPerLevel"`
}

func runStats(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "stats", statsUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("stats takes no arguments")
	}
	s, err := sf.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	st := storeStats{PerLevel: map[string]int{}}
	namespaces, agents := map[string]bool{}, map[string]bool{}
	err = forEachSession(ctx, s, func(ref transcript.TranscriptRef) error {
		namespaces[ref.Namespace] = true
		agents[ref.Namespace+"/"+ref.AgentID] = true
		st.Sessions++
		segs, err := s.ListSegments(ctx, ref)
		if err != nil {
			return err
		}
		for _, seg := range segs {
			st.Segments++
			st.Bytes += seg.Size
			st.PerLevel[fmt.Sprintf("L%d", seg.Level)]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.Namespaces, st.Agents = len(namespaces), len(agents)
	if sf.json {
		return writeJSON(env.stdout, st)
	}
	fmt.Fprintf(env.stdout, "namespaces %d\nagents     %d\nsessions   %d\nsegments   %d\nbytes      %d\n",
		st.Namespaces, st.Agents, st.Sessions, st.Segments, st.Bytes)
	levels := make([]string, 0, len(st.PerLevel))
	for l := range st.PerLevel {
		levels = append(levels, l)
	}
	sort.Strings(levels)
	for _, l := range levels {
		fmt.Fprintf(env.stdout, "  %s       %d\n", l, st.PerLevel[l])
	}
	return nil
}
