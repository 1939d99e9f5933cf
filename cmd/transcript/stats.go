package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"text/tabwriter"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const statsUsage = `
Usage: transcript stats [flags]

Counts the sessions and segments of --ns (only those of --agent, or the one
--session, when given): segments and bytes per level, the uncompressed size of
their entries and the compression ratio (uncompressed / stored). Every stored
segment is counted, also those compaction has merged into a segment of the next
level and that wait for their delete delay to pass ('ls' counts only the segments
a read uses). Reads every segment's metadata; changes nothing.

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
	parallel := fs.Int("parallel", cmdcli.DefaultParallel, "sessions read at once")
	s, refs, err := sf.parseSelection(ctx, fs, args, parallel, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	st := storeStats{Namespace: sf.Namespace, PerLevel: map[string]levelStats{}}
	absent := make([]bool, len(refs))
	var mu sync.Mutex
	err = forEachSession(ctx, *parallel, refs, func(ctx context.Context, i int, ref transcript.TranscriptRef) error {
		segs, err := s.ListSegments(ctx, ref)
		if err != nil {
			return err
		}
		if len(segs) == 0 && sf.notASession(ctx, s, ref) {
			absent[i] = true
			return nil
		}
		for _, info := range segs {
			seg, err := s.ReadSegment(ctx, info.Key)
			if errors.Is(err, bucket.ErrNotFound) {
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
	agents := map[string]bool{}
	for i, ref := range refs {
		if !absent[i] {
			st.Sessions++
			agents[ref.AgentID] = true
		}
	}
	st.Agents = len(agents)
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
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "namespace\t%s\nagents\t%d\nsessions\t%d\nsegments\t%d\nbytes\t%d\nraw bytes\t%d\ncompression\t%.2fx\n",
		st.Namespace, st.Agents, st.Sessions, st.Segments, st.Bytes, st.RawBytes, st.CompressionRatio)
	if err := tw.Flush(); err != nil {
		return err
	}
	levels := make([]string, 0, len(st.PerLevel))
	for l := range st.PerLevel {
		levels = append(levels, l)
	}
	sort.Strings(levels)
	for _, name := range levels {
		l := st.PerLevel[name]
		fmt.Fprintf(env.stdout, "  %-4s %6d %-8s %12d bytes\n", name, l.Segments, cmdcli.Plural(l.Segments, "segment"), l.Bytes)
	}
	return nil
}
