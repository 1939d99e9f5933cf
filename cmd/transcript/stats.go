package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

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
a read uses). Large payloads (images, long tool outputs) that the store keeps once,
outside the segments, are counted apart: how many distinct payloads the segments
reference, their size (each once, and stored), and how many references share them.
Objects under the namespace's or an agent's key prefix that belong to no session
(files another tool dropped there, which verify names and readers ignore) are
counted apart too, as stray objects and their bytes ("stray" in --json; none
are counted with --session).
Reads every segment, never a payload; changes nothing. A segment it cannot read
(corrupt or truncated, as in a damaged copy of the bucket) is counted apart, as
unreadable, named ("unreadable" in --json), and makes it exit 1.

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
	Payloads         payloadStats          `json:"payloads"`
	// Stray counts the objects outside every session.
	Stray strayStats `json:"stray"`
	// Unreadable are the keys of the segments that could not be read (corrupt,
	// truncated: verify says why), in key order; they are counted nowhere else,
	// and the run exits 1.
	Unreadable []string `json:"unreadable,omitempty"`
}

// strayStats counts the objects outside every session (Store.StrayObjects).
type strayStats struct {
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// payloadStats counts the payloads the segments reference.
type payloadStats struct {
	// Count is the number of distinct payloads referenced; Bytes their size, each
	// counted once; StoredBytes the size of their objects (compressed).
	Count       int   `json:"count"`
	Bytes       int64 `json:"bytes"`
	StoredBytes int64 `json:"storedBytes"`
	// References is the number of references to them; ReferencedBytes the bytes
	// those references stand for (what the segments would hold inline).
	References      int   `json:"references"`
	ReferencedBytes int64 `json:"referencedBytes"`
	// Missing counts payloads referenced whose object is not there (see verify).
	Missing int `json:"missing"`
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
	used := map[payloadKey]uint64{}
	stored := s.Stored() // no payload is fetched
	// The stray objects take a few listings, which the sessions' reads hide.
	strayCtx, cancelStray := context.WithCancel(ctx)
	defer cancelStray()
	var stray errgroup.Group
	var strays strayStats
	stray.Go(func() error {
		var err error
		strays, err = countStray(strayCtx, s, sf, *parallel)
		return err
	})
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
			seg, err := stored.ReadSegment(ctx, info.Key)
			if errors.Is(err, bucket.ErrNotFound) {
				continue // removed since the listing (compaction)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				mu.Lock()
				st.Unreadable = append(st.Unreadable, info.Key)
				mu.Unlock()
				continue
			}
			mu.Lock()
			l := st.PerLevel[fmt.Sprintf("L%d", info.Level)]
			l.Segments++
			l.Bytes += info.Size
			l.RawBytes += int64(seg.Meta.RawLen)
			st.PerLevel[fmt.Sprintf("L%d", info.Level)] = l
			for _, r := range seg.Meta.Refs {
				used[payloadKey{ns: ref.Namespace, hash: r.Hash}] = r.Size
				st.Payloads.References++
				st.Payloads.ReferencedBytes += int64(r.Size)
			}
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		cancelStray()
	}
	if serr := stray.Wait(); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	st.Stray = strays
	agents := map[string]bool{}
	for i, ref := range refs {
		if !absent[i] {
			st.Sessions++
			agents[ref.AgentID] = true
		}
	}
	st.Agents = len(agents)
	if err := countPayloads(ctx, s, used, &st.Payloads); err != nil {
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
	sort.Strings(st.Unreadable)
	if err := printStats(env, st, sf.json); err != nil {
		return err
	}
	if len(st.Unreadable) > 0 {
		return errProblems
	}
	return nil
}

// printStats writes st as a table, or as one JSON object.
func printStats(env *cliEnv, st storeStats, asJSON bool) error {
	if asJSON {
		return writeJSON(env.stdout, st)
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "namespace\t%s\nagents\t%d\nsessions\t%d\nsegments\t%d\nbytes\t%d\nraw bytes\t%d\ncompression\t%.2fx\n",
		st.Namespace, st.Agents, st.Sessions, st.Segments, st.Bytes, st.RawBytes, st.CompressionRatio)
	if p := st.Payloads; p.Count > 0 {
		fmt.Fprintf(tw, "payloads\t%d (%d bytes, %d stored), %d references (%d bytes inline)\n",
			p.Count, p.Bytes, p.StoredBytes, p.References, p.ReferencedBytes)
		if p.Missing > 0 {
			fmt.Fprintf(tw, "missing payloads\t%d (run transcript verify)\n", p.Missing)
		}
	}
	if st.Stray.Objects > 0 {
		fmt.Fprintf(tw, "stray objects\t%d (%d bytes, in no session: run transcript verify)\n", st.Stray.Objects, st.Stray.Bytes)
	}
	if n := len(st.Unreadable); n > 0 {
		more := ""
		if n > 3 {
			more = fmt.Sprintf(" and %d more", n-3)
		}
		fmt.Fprintf(tw, "unreadable\t%s, counted nowhere else (run transcript verify): %s%s\n",
			cmdcli.Count(n, "segment"), cmdcli.Escape(strings.Join(st.Unreadable[:min(n, 3)], ", ")), more)
	}
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

// countPayloads fills p's counts of the distinct payloads used (their sizes, by
// namespace and hash) and the stored size of their objects: one listing of each
// namespace's payloads.
func countPayloads(ctx context.Context, s *transcript.Store, used map[payloadKey]uint64, p *payloadStats) error {
	objects := map[string]map[transcript.PayloadHash]int64{}
	for k, size := range used {
		p.Count++
		p.Bytes += int64(size)
		if objects[k.ns] == nil {
			got, err := s.PayloadObjects(ctx, k.ns)
			if err != nil {
				return err
			}
			objects[k.ns] = got
		}
		if n, ok := objects[k.ns][k.hash]; ok {
			p.StoredBytes += n
		} else {
			p.Missing++
		}
	}
	return nil
}

// countStray counts the objects that verify names as outside every session
// (strayProblems: none with --session, the agent's with --agent) and their
// size: one delimited listing of the namespace and of each agent (and the
// listing of the agents), plus one request for the size of each such object.
func countStray(ctx context.Context, s *transcript.Store, sf *storeFlags, parallel int) (strayStats, error) {
	var st strayStats
	problems, err := strayProblems(ctx, s, sf)
	if err != nil {
		return st, err
	}
	sizes := make([]int64, len(problems))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, p := range problems {
		g.Go(func() error {
			oi, err := s.Bucket().Stat(gctx, p.Key)
			if errors.Is(err, bucket.ErrNotFound) {
				sizes[i] = -1 // removed since the listing
				return nil
			}
			if err != nil {
				return fmt.Errorf("stray object %s: %w", p.Key, err)
			}
			sizes[i] = oi.Size
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return st, err
	}
	for _, n := range sizes {
		if n >= 0 {
			st.Objects++
			st.Bytes += n
		}
	}
	return st, nil
}
