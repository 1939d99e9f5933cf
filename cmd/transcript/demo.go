package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

const demoUsage = `
Usage: transcript demo [flags]

The quick start. Plays --replicas agent replicas (goroutines) working on one session
at the same time, the way replicas behind a load balancer do: each has its own
SessionTree and workspace, picks up what the others stored (Pull), appends
a user and an assistant message per turn and flushes them as one segment. Replicas
that answer from the same state diverge: the session tree branches. Then it reads
the union from the store, compacts the session's segments into one, restores the
session from the bucket alone into a fresh directory, checks that the restored
context equals the one built from the union, and prints what happened.

Examples:
  transcript demo
  transcript demo --replicas 5 --turns 4 --json
  transcript demo --store 's3://demo?endpoint=127.0.0.1:9000&insecure=true&create=true'
`

// demoSummary is what demo prints.
type demoSummary struct {
	Session           string         `json:"session"`
	Replicas          int            `json:"replicas"`
	Turns             int            `json:"turns"`
	EntriesWritten    int            `json:"entriesWritten"`
	Entries           int            `json:"entries"`
	Segments          map[string]int `json:"segments"`
	SegmentsCompact   map[string]int `json:"segmentsAfterCompaction"`
	BranchPoints      int            `json:"branchPoints"`
	Leaves            int            `json:"leaves"`
	ContextMessages   int            `json:"contextMessages"`
	ContextBytes      int            `json:"contextBytes"`
	RestoredEntries   int            `json:"restoredEntries"`
	ContextMatches    bool           `json:"contextMatches"`
	ReplicaSeconds    float64        `json:"replicaSeconds"`
	TotalSeconds      float64        `json:"totalSeconds"`
	RestoredInto      string         `json:"restoredInto,omitempty"`
	CompactedBytesIn  int64          `json:"compactedBytesIn"`
	CompactedBytesOut int64          `json:"compactedBytesOut"`
}

func runDemo(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "demo", demoUsage, true)
	replicas := fs.Int("replicas", 3, "agent replicas working on the session at once")
	turns := fs.Int("turns", 3, "turns (user message, assistant message, flush) per replica")
	workdir := fs.String("workdir", "", "keep the replicas' workspaces and the restored files here (default: a temporary directory, removed)")
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *replicas < 1 || *replicas > 64 || *turns < 1 || *turns > 1000 {
		return usagef("demo: --replicas must be 1..64 and --turns 1..1000")
	}
	if sf.Agent == "" {
		sf.Agent = "demo-agent"
	}
	if sf.Session == "" {
		sf.Session = "demo-" + time.Now().UTC().Format("20060102T150405.000")
	}
	start := time.Now()
	dir := *workdir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "transcript-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	s, err := sf.openStoreToWrite(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := newDemoRun(ctx, env, sf, s, *replicas, *turns)
	if err != nil {
		return err
	}
	written, err := runReplicas(ctx, s, d.ref, dir, *replicas, *turns)
	if err != nil {
		return err
	}
	d.sum.EntriesWritten = written
	d.sum.ReplicaSeconds = time.Since(start).Seconds()
	want, err := d.readUnion(ctx)
	if err != nil {
		return err
	}
	if err := d.compact(ctx); err != nil {
		return err
	}
	if err := d.restore(ctx, filepath.Join(dir, "restored"), *workdir != "", want); err != nil {
		return err
	}
	d.sum.TotalSeconds = time.Since(start).Seconds()
	return d.report(sf)
}

// demoRun is one run of the demo: the session it plays and what it found.
type demoRun struct {
	env *cliEnv
	s   *transcript.Store
	ref transcript.TranscriptRef
	sum demoSummary
	// say prints progress, unless the summary is printed as JSON.
	say func(format string, args ...any)
}

// newDemoRun starts the demo's session on s: one that does not exist yet.
func newDemoRun(ctx context.Context, env *cliEnv, sf *storeFlags, s *transcript.Store, replicas, turns int) (*demoRun, error) {
	ref, err := sf.ref("demo")
	if err != nil {
		return nil, err
	}
	ref = ref.Norm()
	if segs, err := s.ListSegments(ctx, ref); err != nil {
		return nil, err
	} else if len(segs) > 0 {
		return nil, usagef("demo: session %s exists already; choose another --session", ref)
	}
	d := &demoRun{env: env, s: s, ref: ref, sum: demoSummary{Session: ref.String(), Replicas: replicas, Turns: turns}}
	d.say = func(format string, args ...any) {
		if !sf.json {
			fmt.Fprintf(env.stdout, format, args...)
		}
	}
	d.say("session %s on %s: %d replicas x %d turns\n", ref, sf.URL, replicas, turns)
	return d, nil
}

// readUnion reads what the replicas stored and returns the context Pi builds from
// that union.
func (d *demoRun) readUnion(ctx context.Context) (pi.Context, error) {
	res, err := d.s.ReadAll(ctx, d.ref)
	if err != nil {
		return pi.Context{}, err
	}
	d.sum.Entries = len(res.Entries)
	d.sum.Segments = countLevels(res.Segments)
	union := make([]pi.Entry, 0, len(res.Entries))
	for _, e := range res.Entries {
		if pe, err := pi.ParseEntry(e.Raw); err == nil {
			union = append(union, pe)
		}
	}
	d.say("union: %d entries (%d written by the replicas, plus the header) in %d segments (%s)\n",
		d.sum.Entries, d.sum.EntriesWritten, len(res.Segments), formatLevels(d.sum.Segments))
	return pi.BuildContextFrom(union, nil), nil
}

// compact merges the session's segments into one.
func (d *demoRun) compact(ctx context.Context) error {
	compactor, err := transcript.NewWriter("compactor-" + rand.Text()[:8])
	if err != nil {
		return err
	}
	// The merged inputs stay readable for the default delete delay (a reader may
	// have listed them); a later compaction run deletes them.
	cres, err := d.s.Compact(ctx, d.ref, transcript.CompactOptions{MinSegments: 2, Writer: compactor})
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	d.sum.CompactedBytesIn, d.sum.CompactedBytesOut = cres.BytesIn(), cres.BytesOut()
	after, err := d.s.ListSegments(ctx, d.ref)
	if err != nil {
		return err
	}
	d.sum.SegmentsCompact = countLevels(after)
	d.say("compacted: %d segments (%d bytes) into %d (%d bytes); the %d inputs are marked for deletion after %s; stored now: %s\n",
		cres.SegmentsIn(), cres.BytesIn(), cres.SegmentsOut(), cres.BytesOut(), cres.Marked, transcript.DefaultDeleteDelay, formatLevels(d.sum.SegmentsCompact))
	return nil
}

// restore rebuilds the session from the bucket alone into the fresh directory
// dir and compares its context with want, the union's; keep reports the files'
// paths (the caller keeps the directory).
func (d *demoRun) restore(ctx context.Context, dir string, keep bool, want pi.Context) error {
	restored, err := restoreTree(ctx, d.s, d.ref, dir)
	if err != nil {
		return err
	}
	if err := restored.Flush(ctx); err != nil {
		return err
	}
	got := restored.BuildContext()
	sum := &d.sum
	sum.RestoredEntries = restored.Len() + 1 // and the header
	sum.ContextMatches = string(got.JSON()) == string(want.JSON()) && sum.RestoredEntries == sum.Entries
	sum.BranchPoints = len(restored.BranchPoints())
	sum.Leaves = countLeaves(restored.Entries())
	sum.ContextMessages, sum.ContextBytes = len(got.Messages), len(got.JSON())
	if keep {
		sum.RestoredInto = restored.ContextPath()
	}
	d.say("branches: %d branch points, %d leaves (replicas that answered from the same state diverged)\n", sum.BranchPoints, sum.Leaves)
	d.say("restored from the bucket alone into a fresh directory: %d entries; context %d messages, %d bytes; matches the union: %v\n",
		sum.RestoredEntries, sum.ContextMessages, sum.ContextBytes, sum.ContextMatches)
	if keep {
		d.say("restored files: %s\n                %s\n", restored.ContextPath(), restored.LogPath())
	}
	return nil
}

// report prints the summary (as JSON with --json) and fails when the restored
// session differs from the union.
func (d *demoRun) report(sf *storeFlags) error {
	sum := d.sum
	d.say("time: %.2fs (replicas %.2fs)\n", sum.TotalSeconds, sum.ReplicaSeconds)
	if sf.json {
		if err := writeJSON(d.env.stdout, sum); err != nil {
			return err
		}
	} else if strings.HasPrefix(sf.URL, "mem:") {
		// A later command would open an empty store of its own.
		d.say("next: the mem:// store ended with the demo; run it with --store file://DIR or s3://... to look at the session afterwards\n")
	} else {
		d.say("next: transcript tree --store '%s' --ns %s --agent %s --session %s\n", sf.URL, d.ref.Namespace, d.ref.AgentID, d.ref.SessionID)
	}
	if !sum.ContextMatches {
		return fmt.Errorf("demo: the restored session differs from the union (%d of %d entries)", sum.RestoredEntries, sum.Entries)
	}
	return nil
}

// runReplicas plays n replicas of ref, each with its own workspace under dir and its
// own writer, turns turns each, all at once. It returns how many entries they
// appended.
func runReplicas(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, dir string, n, turns int) (int, error) {
	who := sessiontree.Identity{Namespace: ref.Namespace, UserID: "demo-user"}
	cfg := func(i int) (sessiontree.Config, error) {
		w, err := transcript.NewWriter(fmt.Sprintf("replica-%d-%s", i, rand.Text()[:8]))
		if err != nil {
			return sessiontree.Config{}, err
		}
		return sessiontree.Config{
			Root:     filepath.Join(dir, fmt.Sprintf("replica-%d", i)),
			Uploader: &mirror.Direct{Store: s, Writer: w},
			Store:    s,
		}, nil
	}
	// Replica 1 starts the session (header, model, thinking level) before the others
	// join, as the first turn of a conversation lands on one replica.
	first, err := cfg(1)
	if err != nil {
		return 0, err
	}
	cwd, _ := os.Getwd()
	t1, err := sessiontree.New(first, who, ref.AgentID, ref.SessionID, sessiontree.HeaderOptions{Cwd: cwd})
	if err != nil {
		return 0, err
	}
	if _, err := t1.AppendModelChange("openai", "gpt-4o"); err != nil {
		return 0, err
	}
	if _, err := t1.AppendThinkingLevelChange("low"); err != nil {
		return 0, err
	}
	if err := t1.Flush(ctx); err != nil {
		return 0, err
	}

	var mu sync.Mutex
	written := 2
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i <= n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tree := t1
			if i > 1 {
				c, err := cfg(i)
				if err == nil {
					tree, _, err = sessiontree.Open(ctx, c, who, ref.AgentID, ref.SessionID, sessiontree.HeaderOptions{})
				}
				if err != nil {
					errs[i-1] = fmt.Errorf("replica %d: %w", i, err)
					return
				}
			}
			k, err := playReplica(ctx, tree, i, turns)
			mu.Lock()
			written += k
			mu.Unlock()
			if err != nil {
				errs[i-1] = fmt.Errorf("replica %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	return written, errors.Join(errs...)
}

// playReplica runs turns turns on tree: pull, user message, assistant message, flush.
func playReplica(ctx context.Context, tree *sessiontree.Tree, replica, turns int) (int, error) {
	written := 0
	for t := 1; t <= turns; t++ {
		if _, err := tree.Pull(ctx); err != nil {
			return written, err
		}
		for _, role := range []string{"user", "assistant"} {
			if _, err := tree.AppendMessage(demoMessage(role, replica, t)); err != nil {
				return written, err
			}
			written++
		}
		if err := tree.Flush(ctx); err != nil {
			return written, err
		}
	}
	return written, nil
}

// demoMessage is an agent message of the demo conversation.
func demoMessage(role string, replica, turn int) json.RawMessage {
	m := map[string]any{"role": role, "timestamp": time.Now().UnixMilli()}
	if role == "assistant" {
		m["content"] = []map[string]any{{"type": "text", "text": fmt.Sprintf("Replica %d answers turn %d.", replica, turn)}}
		m["api"], m["provider"], m["model"], m["stopReason"] = "openai-completions", "openai", "gpt-4o", "stop"
		m["usage"] = map[string]int{"input": 100, "output": 20}
	} else {
		m["content"] = fmt.Sprintf("Turn %d, asked on replica %d: what changed?", turn, replica)
	}
	b, _ := json.Marshal(m)
	return b
}

// countLevels counts segments per level ("L0": n, ...).
func countLevels(segs []transcript.SegmentInfo) map[string]int {
	out := map[string]int{}
	for _, s := range segs {
		out[fmt.Sprintf("L%d", s.Level)]++
	}
	return out
}

// formatLevels prints per-level counts in level order: "L0 10, L1 1".
func formatLevels(levels map[string]int) string {
	names := slices.Sorted(maps.Keys(levels))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %d", name, levels[name])
	}
	return strings.Join(parts, ", ")
}

// countLeaves counts the entries nobody names as parent (the tips of the branches).
func countLeaves(entries []pi.Entry) int {
	parents := map[string]bool{}
	for _, e := range entries {
		if p, ok := e.ParentID(); ok {
			parents[p] = true
		}
	}
	n := 0
	for _, e := range entries {
		if !parents[e.ID()] && e.Type() != pi.TypeLeaf {
			n++
		}
	}
	return n
}
