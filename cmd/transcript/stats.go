package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/transcriptstore/transcript/transcript"
)

const statsUsage = `
Usage: transcript stats [flags]

Counts the sessions and segments of --ns (only those of --agent, or the one
--session, when given): segments and bytes per level, the uncompressed size of
their entries and the compression ratio (uncompressed / stored). Reads every
segment's metadata; changes nothing.

Examples:
  transcript stats
  transcript stats --json --store 's3://transcripts?endpoint=127.0.0.1:9000&insecure=true'
`

// levelStats counts the segments of one level.
type levelStats struct {
	Segments int   `json:"segments"`
	Bytes    int64 `json:"bytes"`
	RawBytes int64 `json:"rawBytes"`
}

// storeStats is stats' result.
type storeStats struct {
	Namespace        string                `json:"namespace"`
	Agents           int                   `json:"agents"`
	Sessions         int                   `json:"sessions"`
	Segments         int                   `json:"segments"`
	Bytes            int64                 `json:"bytes"`
	RawBytes         int64                 `json:"rawBytes"`
	CompressionRatio float64               `json:"compressionRatio"`
	PerLevel         map[string]levelStats `json:"levels"`
}

func runStats(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "stats", statsUsage, true)
	parallel := fs.Int("parallel", 4, "sessions read at once")
	s, refs, err := sf.parseSelection(ctx, fs, args, parallel, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	st := storeStats{Namespace: sf.namespace, Sessions: len(refs), PerLevel: map[string]levelStats{}}
	agents := map[string]bool{}
	for _, ref := range refs {
		agents[ref.AgentID] = true
	}
	st.Agents = len(agents)
	var mu sync.Mutex
	err = forEachSession(ctx, *parallel, refs, func(ctx context.Context, _ int, ref transcript.TranscriptRef) error {
		segs, err := s.ListSegments(ctx, ref)
		if err != nil {
			return err
		}
		for _, info := range segs {
			seg, err := s.ReadSegment(ctx, info.Key)
			if errors.Is(err, transcript.ErrNotFound) {
				continue // removed since the listing (compaction)
			}
			if err != nil {
				return fmt.Errorf("%w (run transcript verify)", err)
			}
			mu.Lock()
			l := st.PerLevel[fmt.Sprintf("L%d", info.Level)]
			l.Segments++
			l.Bytes += info.Size
			l.RawBytes += int64(seg.Meta.RawLen)
			st.PerLevel[fmt.Sprintf("L%d", info.Level)] = l
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, l := range st.PerLevel {
		st.Segments += l.Segments
		st.Bytes += l.Bytes
		st.RawBytes += l.RawBytes
	}
	if st.Bytes > 0 {
		st.CompressionRatio = float64(st.RawBytes) / float64(st.Bytes)
	}
	if sf.json {
		return writeJSON(env.stdout, st)
	}
	fmt.Fprintf(env.stdout, "namespace  %s\nagents     %d\nsessions   %d\nsegments   %d\nbytes      %d\nraw bytes  %d\ncompression %.2fx\n",
		st.Namespace, st.Agents, st.Sessions, st.Segments, st.Bytes, st.RawBytes, st.CompressionRatio)
	levels := make([]string, 0, len(st.PerLevel))
	for l := range st.PerLevel {
		levels = append(levels, l)
	}
	sort.Strings(levels)
	for _, name := range levels {
		l := st.PerLevel[name]
		fmt.Fprintf(env.stdout, "  %-4s %6d segments %12d bytes\n", name, l.Segments, l.Bytes)
	}
	return nil
}
