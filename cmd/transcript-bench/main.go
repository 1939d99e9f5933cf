// Command transcript-bench measures the transcript store against its baselines and
// limits, side by side, in one run on one machine:
//
//	go run ./cmd/transcript-bench [--store URL] [--quick] [--json FILE] [--markdown FILE]
//
// Each measurement (the numbered items of BENCHMARKS.md: segment codec, local flush,
// mirror bytes and requests, open latency, concurrent replicas, restore,
// compaction, request cost, the API's reads, list and event streams) runs in a child process of its own (the runner re-executes
// itself), so that the peak RSS reported for it is its own. Every figure is printed
// with its baseline and the ratio store / baseline.
//
// The runner starts nothing it does not own: it works against --store (mem://,
// file://DIR or s3://BUCKET/PREFIX?endpoint=...; see transcript/bucketurl), writes
// under a fresh prefix of its own and deletes that prefix at the end. Items whose
// baseline is a raw S3 client (5, 6) need an s3:// store and are reported as skipped
// otherwise. --quick runs reduced sizes (under two minutes on two cores); without it
// the full sizes run (under fifteen minutes).
//
// --markdown FILE writes the results (command, date, machine, table, charts) into
// FILE between the lines "<!-- bench:results:start -->" and
// "<!-- bench:results:end -->" when FILE has them, so that the prose around the
// table survives a new run; otherwise it writes FILE anew. The charts (SVG) go to
// --charts DIR (default docs/bench next to FILE).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/internal/rusage"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// Environment of a child process: the group it runs, its configuration (JSON) and
// the file it writes its ItemResult to.
const (
	envChild  = "TRANSCRIPT_BENCH_CHILD"
	envConfig = "TRANSCRIPT_BENCH_CONFIG"
	envOut    = "TRANSCRIPT_BENCH_OUT"
)

const (
	markStart = "<!-- bench:results:start -->"
	markEnd   = "<!-- bench:results:end -->"
)

// childConfig is what the parent hands each child.
type childConfig struct {
	Store string `json:"store"`
	// RunPrefix is the run's own key prefix (below the store URL's prefix).
	RunPrefix string `json:"runPrefix"`
	Sizes     Sizes  `json:"sizes"`
	// Items are the items --items selected (empty: all). A group runs all of
	// its items when one of them is selected, except the API group, whose items
	// are independent (item 16 alone writes a million entries).
	Items []int `json:"items,omitempty"`
	// CPUProfileDir, when set, is where each child writes the CPU profile of its
	// whole run as {group}.cpu.pprof.
	CPUProfileDir string `json:"cpuProfileDir,omitempty"`
	// TraceDir, when set, is where each child writes the execution trace of its
	// whole run as {group}.trace: the store's reads are tasks (transcript.ReadAll,
	// transcript.ReadNew, transcript.ReadLean) with regions "list segments", "get
	// segment", "parse entries" and "merge entries", and the segment codec marks
	// "decode frame", "check frame", "decompress segment" and "verify segment",
	// so go tool trace shows where one open spends its time.
	TraceDir string `json:"traceDir,omitempty"`
	// ServerPID, when set, is the process ID of the object store's server on
	// this machine (--server-pid): item 4 reports its CPU time per call.
	ServerPID int `json:"serverPID,omitempty"`
}

func main() {
	if os.Getenv(envSpawn) != "" { // before envChild, which a spawner inherits
		os.Exit(spawnMain(os.Args[1:]))
	}
	if g := os.Getenv(envChild); g != "" {
		os.Exit(childMain(g))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		stop()
		os.Exit(cli.ExitCode(err, os.Stderr, "transcript-bench --help"))
	}
}

const benchUsage = `Usage: transcript-bench [--store URL] [--quick] [--json FILE] [--markdown FILE] [--charts DIR] [--items 1,2,...] [--cpuprofile DIR] [--trace DIR] [--server-pid PID]

Measures the store against its baselines, each measurement in a child process of
its own, and prints every figure with its baseline and the ratio. Exit codes: 0
success, 1 failure, 2 usage error.

Examples:
  transcript-bench --quick
  transcript-bench --quick --store 's3://transcript-bench?endpoint=127.0.0.1:9000&insecure=true&create=true'
  transcript-bench --markdown BENCHMARKS.md --json bench.json
  transcript-bench --items 7 --cpuprofile prof --store 's3://...' && go tool pprof -top prof/compact.cpu.pprof
  transcript-bench --items 4 --trace prof --store 's3://...' && go tool trace prof/open.trace
  transcript-bench --items 4 --server-pid "$(pgrep -x minio)" --store 's3://...'`

// options are the parsed flags.
type options struct {
	store, jsonPath, mdPath, chartsDir string
	cpuProfileDir, traceDir            string
	serverPID                          int
	quick, keep                        bool
	scale                              float64
	items                              []int
	childTimeout                       time.Duration
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	if len(args) == 1 && args[0] == "help" {
		args = []string{"--help"} // as the other binaries take it
	}
	var o options
	fs := cli.NewFlagSet("transcript-bench", benchUsage, stdout)
	// No TRANSCRIPT_STORE here: the bench writes (under a prefix of its own), so the
	// store it measures is always named on its command line.
	fs.StringVar(&o.store, "store", "mem://", "bucket `URL` to measure (mem://, file://DIR, s3://BUCKET/PREFIX?endpoint=...)")
	fs.BoolVar(&o.quick, "quick", false, "reduced sizes (under two minutes on two cores)")
	fs.StringVar(&o.jsonPath, "json", "", "write the report as JSON to `FILE`")
	fs.StringVar(&o.mdPath, "markdown", "", "write the results into `FILE` (e.g. BENCHMARKS.md)")
	fs.StringVar(&o.chartsDir, "charts", "", "`DIR`ectory of the SVG charts (default docs/bench next to --markdown)")
	fs.BoolVar(&o.keep, "keep", false, "keep the objects written (default: delete the run's prefix)")
	itemList := fs.String("items", "", "comma-separated item numbers to run (default all)")
	fs.Float64Var(&o.scale, "scale", 1, "multiply the sizes (for tests)")
	_ = fs.MarkHidden("scale")
	fs.DurationVar(&o.childTimeout, "item-timeout", 10*time.Minute, "bound on each measurement")
	fs.StringVar(&o.cpuProfileDir, "cpuprofile", "", "write each measurement's CPU profile to `DIR`/{group}.cpu.pprof (for go tool pprof)")
	fs.StringVar(&o.traceDir, "trace", "", "write each measurement's execution trace to `DIR`/{group}.trace (for go tool trace; the store's reads are tasks with regions)")
	fs.IntVar(&o.serverPID, "server-pid", 0, "process ID of the object store's server on this machine (Linux): item 4 also reports its CPU time per call")
	if err := cli.Parse(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, cli.Usagef("unexpected arguments %q", fs.Args())
	}
	if _, err := bucketurl.Parse(o.store); err != nil {
		return o, cli.Usagef("--store: %v", err)
	}
	if o.serverPID != 0 {
		if _, err := rusage.ProcessCPU(o.serverPID); err != nil {
			return o, cli.Usagef("--server-pid: %v", err)
		}
	}
	if o.scale <= 0 || o.scale > 1 {
		return o, cli.Usagef("--scale must be in (0, 1]")
	}
	if *itemList != "" {
		for _, f := range strings.Split(*itemList, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || !slices.ContainsFunc(groups, func(g group) bool { return slices.Contains(g.items, n) }) {
				return o, cli.Usagef("--items: %q is not an item number (see BENCHMARKS.md)", f)
			}
			o.items = append(o.items, n)
		}
	}
	if o.mdPath != "" && o.chartsDir == "" {
		o.chartsDir = filepath.Join(filepath.Dir(o.mdPath), "docs", "bench")
	}
	return o, nil
}

// run is the parent: it runs each group of items in a child process and reports.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	loc, err := bucketurl.Parse(o.store)
	if err != nil {
		return err
	}
	if loc.Scheme == "s3" {
		// A bucket that does not exist (and that create=true does not make) is
		// "not found" here, as in every command, before any child starts.
		s, err := cli.OpenStore(ctx, o.store, "", cli.ReadWrite)
		if err != nil {
			return err
		}
		s.Close()
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	rnd := make([]byte, 4)
	if _, err := rand.Read(rnd); err != nil {
		return err
	}
	start := time.Now()
	cfg := childConfig{Store: o.store, Sizes: newSizes(o.quick, o.scale), Items: o.items, ServerPID: o.serverPID,
		RunPrefix: "transcript-bench/" + start.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(rnd)}
	if cfg.CPUProfileDir, err = outputDir(o.cpuProfileDir); err != nil {
		return err
	}
	if cfg.TraceDir, err = outputDir(o.traceDir); err != nil {
		return err
	}
	mode := "full"
	if o.quick {
		mode = "quick"
	}
	rep := &Report{Command: commandLine(args), Date: start, Machine: machine(), Store: bucketurl.Redact(o.store),
		Mode: mode, Sizes: cfg.Sizes}
	if loc.Scheme != "s3" {
		fmt.Fprintln(stderr, "note: items 5 and 6 need an s3:// store and are skipped")
	}
	for _, g := range groups {
		if len(o.items) > 0 && !slices.ContainsFunc(g.items, func(i int) bool { return slices.Contains(o.items, i) }) {
			continue
		}
		if g.s3Only && loc.Scheme != "s3" {
			rep.Items = append(rep.Items, ItemResult{Group: g.name, Rows: g.skippedRows("needs s3://"), Skipped: "needs s3://"})
			continue
		}
		fmt.Fprintf(stderr, "== %s (items %v)\n", g.name, g.items)
		res := runChild(ctx, exe, g.name, cfg, o.childTimeout, stderr)
		if res.Error != "" {
			fmt.Fprintf(stderr, "   %s failed: %s\n", g.name, res.Error)
			if len(res.Rows) == 0 {
				res.Rows = g.skippedRows("failed: " + res.Error)
			}
		} else {
			fmt.Fprintf(stderr, "   %s done in %.1f s, peak RSS %.0f MiB\n", g.name, res.Seconds, float64(res.PeakRSSKiB)/1024)
		}
		rep.Items = append(rep.Items, res)
		if ctx.Err() != nil {
			break
		}
	}
	if !o.keep {
		if err := cleanup(context.WithoutCancel(ctx), o.store, cfg.RunPrefix); err != nil {
			fmt.Fprintf(stderr, "cleanup of %s: %v\n", cfg.RunPrefix, err)
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := rep.WriteJSON(o.jsonPath); err != nil {
			return err
		}
	}
	if o.mdPath != "" {
		charts, err := drawCharts(rep, o.chartsDir)
		if err != nil {
			return fmt.Errorf("charts: %w", err)
		}
		if err := writeMarkdown(rep, o.mdPath, charts); err != nil {
			return err
		}
	}
	for _, it := range rep.Items {
		if it.Error != "" {
			return fmt.Errorf("%s: %s", it.Group, it.Error)
		}
	}
	return ctx.Err()
}

// commandLine is the command as a user would type it (the store URL redacted).
func commandLine(args []string) string {
	out := []string{"go run ./cmd/transcript-bench"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "--store=") || strings.HasPrefix(a, "-store=") {
			k, v, _ := strings.Cut(a, "=")
			a = k + "=" + bucketurl.Redact(v)
		}
		if (a == "--store" || a == "-store") && i+1 < len(args) {
			out = append(out, a, "'"+bucketurl.Redact(args[i+1])+"'")
			i++
			continue
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

// runChild re-executes the runner for one group and returns what it reported.
func runChild(ctx context.Context, exe, group string, cfg childConfig, timeout time.Duration, stderr io.Writer) ItemResult {
	res := ItemResult{Group: group}
	out, err := os.CreateTemp("", "transcript-bench-*.json")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	out.Close()
	defer os.Remove(out.Name())
	cj, err := json.Marshal(cfg)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe)
	cmd.Env = append(os.Environ(), envChild+"="+group, envConfig+"="+string(cj), envOut+"="+out.Name())
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	runErr := cmd.Run()
	data, err := os.ReadFile(out.Name())
	if err == nil && len(data) > 0 {
		err = json.Unmarshal(data, &res)
	}
	switch {
	case runErr != nil && res.Error == "":
		res.Error = fmt.Sprintf("child process: %v", runErr)
		if cctx.Err() != nil {
			res.Error += fmt.Sprintf(" (after the --item-timeout of %v)", timeout)
		}
	case err != nil && res.Error == "":
		res.Error = fmt.Sprintf("reading the child's report: %v", err)
	}
	return res
}

// childMain runs one group in this process and writes its ItemResult to envOut.
func childMain(group string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var cfg childConfig
	res := ItemResult{Group: group}
	start := time.Now()
	err := json.Unmarshal([]byte(os.Getenv(envConfig)), &cfg)
	var stops []func() error
	if err == nil && cfg.CPUProfileDir != "" {
		var stop func() error
		stop, err = startCPUProfile(filepath.Join(cfg.CPUProfileDir, group+".cpu.pprof"))
		stops = append(stops, stop)
	}
	if err == nil && cfg.TraceDir != "" {
		var stop func() error
		stop, err = startTrace(filepath.Join(cfg.TraceDir, group+".trace"))
		stops = append(stops, stop)
	}
	if err == nil {
		res, err = runGroup(ctx, group, cfg)
		res.Group = group
	}
	if err != nil {
		res.Error = err.Error()
	}
	for _, stop := range stops {
		if stop == nil {
			continue
		}
		if perr := stop(); perr != nil && res.Error == "" {
			res.Error = perr.Error()
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.PeakRSSKiB = peakRSSKiB()
	data, merr := json.Marshal(res)
	if merr == nil {
		merr = os.WriteFile(os.Getenv(envOut), data, 0o644)
	}
	if merr != nil {
		fmt.Fprintln(os.Stderr, "transcript-bench child:", merr)
		return 2
	}
	if err != nil {
		return 1
	}
	return 0
}

// writeMarkdown puts the results into path between the markers, or writes path anew.
func writeMarkdown(rep *Report, path string, charts []string) error {
	var b strings.Builder
	if err := rep.WriteMarkdown(&b, charts, filepath.Dir(path)); err != nil {
		return err
	}
	body := markStart + "\n" + b.String() + markEnd + "\n"
	old, err := os.ReadFile(path)
	if err == nil {
		s := string(old)
		i, j := strings.Index(s, markStart), strings.Index(s, markEnd)
		if i >= 0 && j > i {
			body = s[:i] + body + strings.TrimPrefix(s[j+len(markEnd):], "\n")
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	} else {
		body = "# Benchmarks\n\n" + body
	}
	return os.WriteFile(path, []byte(body), 0o644)
}

// outputDir creates dir (for --cpuprofile or --trace) and returns it absolute, for
// the children, which run elsewhere; "" stays "".
func outputDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

// startTrace starts the execution trace of this process into path; the function
// it returns stops it and closes the file.
func startTrace(path string) (func() error, error) {
	return startRecording(path, "trace", trace.Start, trace.Stop)
}

// startCPUProfile starts the CPU profile of this process into path; the function
// it returns stops it and closes the file.
func startCPUProfile(path string) (func() error, error) {
	return startRecording(path, "cpu profile", pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startRecording creates path and starts a recording of this process (what
// names it in errors) into it; the function it returns stops the recording and
// closes the file.
func startRecording(path, what string, start func(io.Writer) error, stop func()) (func() error, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return func() error {
		stop()
		return f.Close()
	}, nil
}
