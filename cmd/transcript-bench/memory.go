package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/internal/benchkit"
	"github.com/transcriptstore/transcript/internal/rusage"
	"github.com/transcriptstore/transcript/transcript"
)

// memAgent is the agent of the sessions item 12 writes.
const memAgent = "memory"

// runMemory measures item 12: the peak RSS and the time of the transcript CLI's
// restore, export, context and verify of one session of each size in
// Sizes.MemoryEntries, each run as a subprocess (the binary built with go build)
// against --store, next to the session's JSONL size: the goal is a peak RSS of at
// most 3× the JSONL size plus the binary's idle RSS (idleRSS; the baseline is that
// bound, so a ratio above 1 misses it). Each session is measured twice: as its
// writer stored it (level-0 segments) and after one compaction, the layout the
// offline job leaves every long session in, whose segment carries an entry
// index and origins in its metadata.
func runMemory(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	storeURL, err := cliStoreURL(e.cfg.Store, path.Join(e.cfg.RunPrefix, "memory"))
	if err != nil {
		res.Rows = []Row{{Item: 12, Name: "peak RSS of restore, export, context and verify", Skipped: err.Error()}}
		return res, nil
	}
	bin := filepath.Join(e.tmp, "transcript")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/transcriptstore/transcript/cmd/transcript")
	if out, err := build.CombinedOutput(); err != nil {
		return res, fmt.Errorf("go build the transcript CLI: %w: %s", err, out)
	}
	idle, err := idleRSS(ctx, bin)
	if err != nil {
		return res, err
	}
	e.logf("idle RSS of the CLI (transcript --version): %.1f MiB", mib(idle))
	store, err := e.newStore(e.bucket, "memory")
	if err != nil {
		return res, err
	}
	defer store.Close()
	for _, n := range e.cfg.Sizes.MemoryEntries {
		sid := fmt.Sprintf("s%d", n)
		ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: memAgent, SessionID: sid}
		// In two segments at least, so that there is something to compact: a
		// session shorter than benchkit.LinearBatch is written in two halves.
		batch := benchkit.LinearBatch
		if n < batch {
			batch = max(1, (n+1)/2)
		}
		jsonl, err := benchkit.WriteLinearSessionBatched(ctx, store, ref, n, batch)
		if err != nil {
			return res, err
		}
		e.logf("session of %d entries: %.1f MiB of JSONL", n, mib(jsonl))
		m := memSession{bin: bin, store: storeURL, sid: sid, entries: n, jsonl: jsonl, idle: idle}
		rows, err := m.measure(ctx, e, "")
		if err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, rows...)
		c, err := store.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
		if err != nil {
			return res, fmt.Errorf("compact the session of %d entries: %w", n, err)
		}
		if len(c.Compactions) == 0 {
			return res, fmt.Errorf("compact the session of %d entries: nothing compacted (%d segments)", n, c.Segments)
		}
		e.logf("session of %d entries compacted: %d segments into %d", n, c.Segments, len(c.Compactions[0].Outputs))
		if rows, err = m.measure(ctx, e, "compacted "); err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, rows...)
	}
	return res, nil
}

// memSession is one session of item 12 and what its rows need.
type memSession struct {
	bin, store, sid string
	entries         int
	jsonl, idle     int64
}

// measure runs restore, export, context and verify of the session as it is
// stored now and returns their rows; layout ("" or "compacted ") goes into the
// rows' names.
func (m memSession) measure(ctx context.Context, e *env, layout string) ([]Row, error) {
	common := []string{"--store", m.store, "--agent", memAgent, "--session", m.sid}
	restored, exported := filepath.Join(e.tmp, "restore-"+m.sid), filepath.Join(e.tmp, "export-"+m.sid+".jsonl")
	runs := []struct {
		name string
		args []string
	}{
		{"restore", append([]string{"restore", "--out", restored}, common...)},
		{"export", append([]string{"export", "--out", exported}, common...)},
		{"context", append([]string{"context"}, common...)},
		{"verify", append([]string{"verify"}, common...)},
	}
	label := "level 0"
	if layout != "" {
		label = strings.TrimSpace(layout)
	}
	var rows []Row
	for _, r := range runs {
		rss, d, err := runMeasured(ctx, m.bin, r.args)
		if err != nil {
			return nil, fmt.Errorf("%s of %d entries (%s): %w", r.name, m.entries, label, err)
		}
		e.logf("%s, %d entries (%s): peak RSS %.1f MiB (%.2f× JSONL), %v", r.name, m.entries, label, mib(rss), float64(rss)/float64(m.jsonl), d.Round(time.Millisecond))
		goal := 3*mib(m.jsonl) + mib(m.idle)
		rows = append(rows,
			Row{Item: 12, Name: fmt.Sprintf("%s of a %s%s-entry session: peak RSS", r.name, layout, countName(m.entries)), Unit: "MiB",
				Value: mib(rss), Baseline: "3 × the session's JSONL + the CLI's idle RSS (the goal)", BaselineValue: goal, Ratio: mib(rss) / goal,
				Note: fmt.Sprintf("goal = 3 × JSONL %.1f MiB + idle RSS %.1f MiB (transcript --version); RSS / JSONL = %.2f×; %d entries; CLI subprocess, getrusage ru_maxrss",
					mib(m.jsonl), mib(m.idle), float64(rss)/float64(m.jsonl), m.entries)},
			Row{Item: 12, Name: fmt.Sprintf("%s of a %s%s-entry session: time", r.name, layout, countName(m.entries)), Unit: "s",
				Value: d.Seconds(), Note: "wall time of the CLI subprocess"})
	}
	if err := os.RemoveAll(restored); err != nil {
		return nil, err
	}
	return rows, os.Remove(exported)
}

// idleRSS returns the binary's idle footprint: the median peak RSS of three runs
// of `bin --version`, which loads the binary and starts its runtime and package
// initialisation but opens no store and reads nothing. It is the part of a
// command's RSS that does not grow with the session, and the smallest such
// figure (a command that also opened the store would add its client's buffers
// to the allowance), so the goal it enters is the strict one.
func idleRSS(ctx context.Context, bin string) (int64, error) {
	var runs []int64
	for range 3 {
		rss, _, err := runMeasured(ctx, bin, []string{"--version"})
		if err != nil {
			return 0, fmt.Errorf("idle RSS (--version): %w", err)
		}
		runs = append(runs, rss)
	}
	slices.Sort(runs)
	return runs[1], nil
}

// cliStoreURL returns the URL under which the CLI sees the store --store names
// with sub appended to its prefix; a mem:// store lives in this process only.
func cliStoreURL(store, sub string) (string, error) {
	u, err := url.Parse(store)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "file", "s3":
		u.Path = "/" + strings.TrimPrefix(path.Join(u.Path, sub), "/")
		return u.String(), nil
	}
	return "", fmt.Errorf("needs a file:// or s3:// store that a subprocess can open, not %s://", u.Scheme)
}

// envSpawn makes the bench binary a spawner (spawnMain).
const envSpawn = "TRANSCRIPT_BENCH_SPAWN"

// runMeasured runs bin with args, output discarded, and returns its peak RSS in
// bytes and its wall time. It starts bin through a fresh copy of this binary
// (spawnMain): on Linux a child started from a large process reports that
// process's peak RSS as its own when it is larger (exec records the peak of the
// address space it replaces, which the Go runtime's vfork shares with the
// parent), so bin is started from a process of a few MiB instead.
func runMeasured(ctx context.Context, bin string, args []string) (int64, time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{bin}, args...)...)
	cmd.Env = append(os.Environ(), envSpawn+"=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, stderr.String())
	}
	var rss, ns int64
	if _, err := fmt.Sscan(stdout.String(), &rss, &ns); err != nil {
		return 0, 0, fmt.Errorf("spawner said %q: %w", stdout.String(), err)
	}
	return rss, time.Duration(ns), nil
}

// spawnMain runs args[0] with args[1:], its output discarded (stderr kept for
// errors), and prints its peak RSS in bytes and its wall time in nanoseconds.
func spawnMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "spawn: no command")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		return 1
	}
	d := time.Since(start)
	peak, err := rusage.ChildPeakRSS(cmd.ProcessState)
	if err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		return 1
	}
	fmt.Println(peak, d.Nanoseconds())
	return 0
}

// mib converts bytes to MiB.
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// countName writes 100000 as "100k" and 1000000 as "1M".
func countName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
