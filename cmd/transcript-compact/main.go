// Command transcript-compact is the offline compaction and garbage-collection job of a
// segmented transcript store.
//
// For every selected session with at least --min-segments segments at a level it
// writes the next level holding their union and naming them (one segment, or a group
// of parts of at most --target-segment-size bytes of JSONL each); with --full it merges
// all of a session's segments into one instead, whatever their levels. Then it marks
// the merged segments for deletion; a marked segment is deleted once its mark is --delete-delay old
// and the segment that supersedes it is found, right then, to hold every one of its
// entries. Ages (--older-than, --delete-delay) are measured on the bucket's clock from
// the times the bucket reports for its objects, never from key times or this job's
// clock. It never touches a segment written while it runs, and it is idempotent:
// killed at any point and run again, it finishes the work. N workers split a bucket with no
// coordination by --shard I/N (a stable hash of the session), for example as the
// indexes of a Kubernetes indexed Job (deploy/k8s).
//
// Progress goes to stderr: a bar on a terminal, else (a CronJob's log) a line
// every minute saying how many sessions are done.
//
// It takes the store flags of the transcript command (--store, env TRANSCRIPT_STORE,
// --ns, --agent, --session; see internal/cli); a store that does not exist is "not
// found" and nothing is created.
//
// Exit codes: 0 success, 1 some session, or the collection of a namespace's
// payloads, failed (the others were still processed), objects named like a key
// prefix hide sessions from the listings (their namespace's payloads are then
// not collected), or the store was not found, 2 usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(cli.ExitCode(err, os.Stderr, "transcript-compact -h"))
}

const usage = `Usage: transcript-compact [flags]

Compacts the sessions of a transcript store: merges a level's small segments into one
segment of the next level, marks the merged ones for deletion and deletes them after
--delete-delay. Then, in a run over whole namespaces (no --agent or --session; shard
0 of a sharded run), it collects the payload objects (large images and tool outputs
the store keeps once, outside the segments) that no segment references: marked in
one run, deleted in a later one once the mark is --delete-delay old (at least two
minutes) and no segment references them when it looks again. Safe while replicas
write and read; idempotent; resumable.

With a retention policy (--max-age, --keep-last, --retention FILE) it first marks the
sessions the policy selects and deletes those marked at least --delete-delay ago that
nothing was written to since; --hold sessions are never deleted.

Examples:
  transcript-compact --store 's3://transcripts/prod?endpoint=minio:9000' --ns acme
  transcript-compact --shard 2/8 --parallel 16 --json     # worker 2 of 8
  transcript-compact --dry-run --session s1 --agent coder --ns acme
  transcript-compact --full --older-than 24h     # sessions idle for a day: one segment each
  transcript-compact --max-age 30d --keep-last 500 --hold acme/legal/'*' --delete-delay 24h
  transcript-compact --retention retention.yaml --dry-run   # what would go, and why
`

// parseShard parses "I/N" with 0 <= I < N.
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 <= I < N", s)
	}
	return i, n, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	out := cli.NewCheckedWriter(stdout)
	err := runJob(ctx, args, out, stderr, getenv)
	if werr := out.Err(); werr != nil && (err == nil || errors.Is(err, cli.ErrProblems)) {
		return fmt.Errorf("write output: %w", werr)
	}
	return err
}

func runJob(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 1 && args[0] == "help" {
		args = []string{"--help"} // as 'transcript help' and 'transcript-serve help' take it
	}
	fs := cli.NewFlagSet("transcript-compact", usage, stdout)
	var (
		j           = &job{out: stdout, errOut: stderr}
		sf          cli.StoreFlags
		shard       string
		jsonOut     bool
		minSegments int
		delay       time.Duration
		writerID    string
		rf          retentionFlags
		metricsPush string
	)
	sf.Register(fs, getenv, "", "only this `NAMESPACE` (default: every namespace)")
	fs.IntVar(&minSegments, "min-segments", transcript.DefaultMinSegments, "compact a level once it holds this many segments (at least 2)")
	fs.DurationVar(&delay, "delete-delay", transcript.DefaultDeleteDelay, "keep superseded segments, and sessions retention marked, this long after marking them (0: delete at once; the inputs of another run's output wait until it is a minute old)")
	fs.StringVar(&shard, "shard", "0/1", "process shard `I/N` (stable hash of the session; for retention, of the agent)")
	fs.IntVar(&j.parallel, "parallel", cli.DefaultParallel, "sessions compacted at once")
	fs.DurationVar(&j.olderThan, "older-than", 0, "skip sessions with a segment stored less than this ago, by the bucket's clock (0: none skipped)")
	fs.BoolVar(&j.opts.Full, "full", false,
		"merge all of each session's segments, whatever their levels, into one (for sessions that are done: pair it with --older-than)")
	fs.BoolVar(&j.opts.DryRun, "dry-run", false, "print the plan and change nothing")
	fs.BoolVar(&jsonOut, "json", false, "print the summary as JSON on stdout")
	fs.StringVar(&writerID, "writer", "", "writer `ID` of the compacted segments (default: host name and random hex)")
	fs.DurationVar(&j.opts.UncommittedAge, "uncommitted-age", transcript.DefaultDeleteDelay,
		"delete segments of strict sessions that no head commits once this old, by the bucket's clock (longer than any append takes; at least 1m)")
	fs.Int64Var(&j.opts.TargetSegmentSize, "target-segment-size", segment.DefaultTargetSegmentSize,
		"split an output above this many `BYTES` of JSONL into a group of parts of one level (at least 1024)")
	rf.register(fs)
	fs.StringVar(&metricsPush, "metrics-push", "", "push the run's metrics to the Prometheus Pushgateway at `URL` when it ends")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected arguments %q", fs.Args())
	}
	j.namespace, j.agent, j.session = sf.Namespace, sf.Agent, sf.Session
	if jsonOut {
		j.out = stderr // the dry run's plan: stdout holds the summary alone
	}
	var err error
	if j.shard, j.shards, err = parseShard(shard); err != nil {
		return cli.Usagef("%v", err)
	}
	if err := j.checkFlags(minSegments, delay); err != nil {
		return err
	}
	if j.retention, err = rf.retention(j.session, fs.Changed); err != nil {
		return err
	}
	if err := sf.Validate("transcript-compact"); err != nil {
		return err
	}
	j.opts.MinSegments = minSegments
	j.opts.DeleteDelay = delay
	if delay == 0 {
		j.opts.DeleteDelay = transcript.DeleteAtOnce
	}
	if writerID != "" {
		if j.opts.Writer, err = transcript.NewWriter(writerID); err != nil {
			return cli.Usagef("--writer: %v", err)
		}
	}

	// The job writes only into sessions that exist: a store that does not exist is
	// "not found", not created.
	if j.store, err = cli.OpenStore(ctx, sf.URL, "", cli.ReadOnly); err != nil {
		return err
	}
	defer j.store.Close()
	// A namespace, agent or session named that does not exist is "not found", as
	// in every command.
	if err := sf.CheckSelection(ctx, j.store); err != nil {
		return err
	}
	j.progress = newProgress(stderr, "compacting sessions")
	j.setRetentionOutput(stdout, stderr, jsonOut)

	sum, err := j.run(ctx)
	j.pushMetrics(ctx, metricsPush, sum, err)
	// Interrupted (SIGINT, SIGTERM), the run still says how far it got: what
	// it compacted stays, and the next run finishes the work.
	interrupted := err != nil && ctx.Err() != nil
	if err != nil && !interrupted {
		return err
	}
	if jsonOut {
		if err := cli.WriteJSON(stdout, sum); err != nil {
			return err
		}
	} else {
		if interrupted {
			fmt.Fprint(stdout, "interrupted: ")
		}
		printSummary(stdout, sum)
	}
	if interrupted {
		return fmt.Errorf("interrupted after %s, %d more left part way (run again to finish): %w",
			cli.Count(sum.SessionsScanned, "session"), sum.partWay, context.Cause(ctx))
	}
	if sum.problems() {
		return cli.ErrProblems
	}
	return nil
}

// minUncommittedAge is the least --uncommitted-age: a strict append stores its
// segment, then writes its head; a segment deleted as uncommitted in between is
// committed all the same, and the append, acknowledged, is lost.
const minUncommittedAge = time.Minute

// checkFlags refuses flag values the job cannot run with, as usage errors.
func (j *job) checkFlags(minSegments int, delay time.Duration) error {
	switch {
	case minSegments < 2:
		return cli.Usagef("--min-segments %d: want at least 2", minSegments)
	case delay < 0:
		return cli.Usagef("--delete-delay %s: want 0 or more", delay)
	case j.parallel < 1:
		return cli.Usagef("--parallel %d: want at least 1", j.parallel)
	case j.opts.UncommittedAge < minUncommittedAge:
		return cli.Usagef("--uncommitted-age %s: want at least %s: it must exceed the longest a strict append takes from its segment to its head write",
			j.opts.UncommittedAge, minUncommittedAge)
	case j.olderThan < 0:
		return cli.Usagef("--older-than %s: want 0 or more", j.olderThan)
	case j.opts.TargetSegmentSize < minTargetSegmentSize || j.opts.TargetSegmentSize > segment.DefaultMaxSegmentSize:
		// A size in MiB given as bytes (64 for 64 MiB) would write an object
		// per entry and exit 0.
		return cli.Usagef("--target-segment-size %d: want %d to %d bytes", j.opts.TargetSegmentSize, minTargetSegmentSize, segment.DefaultMaxSegmentSize)
	case j.session != "" && j.agent == "":
		return cli.Usagef("--session needs --agent")
	}
	return nil
}

// printSummary prints a line for every session the job skipped, with why, then
// the job's summary as one line of text.
func printSummary(w io.Writer, sum *summary) {
	for _, sk := range sum.Skipped {
		fmt.Fprintf(w, "skipped %s: %s\n", cli.Escape(sk.Session), sk.Reason)
	}
	// A dry run marks and deletes nothing: its counts are what the run would do.
	// Marked segments wait for their delay, or for another run's output that
	// supersedes them to settle (a minute, whatever the delay).
	verb, counts := "compacted", "%d marked, %d deleted, %d waiting, %d uncommitted deleted"
	if sum.DryRun {
		verb, counts = "would compact", "would mark %d, would delete %d, %d waiting, would delete %d uncommitted"
	}
	fmt.Fprintf(w, "shard %s: %s scanned, %s %d (%s, %d bytes -> %s, %d bytes); "+counts+"; %d skipped (%d as recent), %d failed; %.1fs\n",
		sum.Shard, cli.Count(sum.SessionsScanned, "session"), verb, sum.SessionsCompacted,
		cli.Count(sum.SegmentsIn, "segment"), sum.BytesIn, cli.Count(sum.SegmentsOut, "segment"), sum.BytesOut,
		sum.Marks, sum.Deletions, sum.PendingDeletions, sum.Uncommitted, len(sum.Skipped), sum.SessionsSkipped,
		sum.SessionsFailed, sum.DurationSeconds)
	if sum.Retention != nil {
		printRetentionSummary(w, sum.Retention, sum.DryRun)
	}
	if sum.PayloadsMarked+sum.PayloadsDeleted+sum.PayloadsPending > 0 {
		fmt.Fprintf(w, "shard %s: payloads: %d marked, %d deleted (%d bytes), %d waiting for their delay\n",
			sum.Shard, sum.PayloadsMarked, sum.PayloadsDeleted, sum.PayloadBytesDeleted, sum.PayloadsPending)
	}
}

// minTargetSegmentSize is the least --target-segment-size: below it the value
// is a size meant in another unit.
const minTargetSegmentSize = 1 << 10
