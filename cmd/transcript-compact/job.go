package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// job is one run of the compaction job over the sessions it selects.
type job struct {
	store *transcript.Store
	// Selection.
	namespace, agent, session string
	shard, shards             int // this worker is shard of shards (0 of 1: everything)
	olderThan                 time.Duration
	// Work.
	parallel int
	opts     transcript.CompactOptions
	// Reporting: plan lines (dry run) go to out (stdout, or stderr with --json,
	// so that stdout holds the summary alone), problems to errOut.
	out, errOut io.Writer
	progress    progress
	mu          sync.Mutex // guards the summary while sessions run

	// Retention (retention.go): the policy, applied before compaction when not
	// nil; the sessions it marked, which compaction leaves alone (guarded by mu
	// while retention runs); where its dry-run plan goes; its progress.
	retention      *transcript.Retention
	retained       map[transcript.TranscriptRef]bool
	planOut        io.Writer
	retainProgress progress

	// hidden holds the namespaces where objects named like a key prefix hide
	// sessions from the listings (findHiding): their payloads are not collected.
	hidden map[string]bool
}

// progress is told how many sessions there are and when each is done.
type progress interface {
	Total(n int)
	Done()
	Finish()
}

type noProgress struct{}

func (noProgress) Total(int) {}
func (noProgress) Done()     {}
func (noProgress) Finish()   {}

// summary is the job's result, printed as JSON with --json.
type summary struct {
	Shard             string `json:"shard"`
	DryRun            bool   `json:"dryRun"`
	SessionsListed    int    `json:"sessionsListed"`
	SessionsScanned   int    `json:"sessionsScanned"`
	SessionsSkipped   int    `json:"sessionsSkippedRecent"`
	SessionsContended int    `json:"sessionsContended"`
	SessionsCompacted int    `json:"sessionsCompacted"`
	SessionsFailed    int    `json:"sessionsFailed"`
	SegmentsIn        int    `json:"segmentsIn"`
	SegmentsOut       int    `json:"segmentsOut"`
	BytesIn           int64  `json:"bytesIn"`
	BytesOut          int64  `json:"bytesOut"`
	Marks             int    `json:"marks"`
	Deletions         int    `json:"deletions"`
	PendingDeletions  int    `json:"pendingDeletions"`
	// Payload objects no segment references (collectPayloads).
	PayloadsMarked      int   `json:"payloadsMarked"`
	PayloadsDeleted     int   `json:"payloadsDeleted"`
	PayloadBytesDeleted int64 `json:"payloadBytesDeleted"`
	PayloadsPending     int   `json:"payloadsPending"`
	// payloadsFailed counts the namespaces whose payload collection failed (their
	// errors are in Errors): the run then has a problem, as for a failed session.
	payloadsFailed int
	// partWay counts the sessions (compactions and retention decisions) that an
	// interruption of the run stopped part way: not failures, and not scanned.
	partWay int
	// Uncommitted counts segments of strict sessions deleted because no head
	// commits them (transcript.CompactResult.Uncommitted).
	Uncommitted int `json:"uncommittedDeletions"`
	// Skipped names every session the job left as it was, or left some levels
	// of, and why, in the order they were done.
	Skipped           []skippedSession `json:"skipped"`
	Errors            []string         `json:"errors"`
	DurationSeconds   float64          `json:"durationSeconds"`
	SessionsPerSecond float64          `json:"sessionsPerSecond"`
	InputMBPerSecond  float64          `json:"inputMBPerSecond"`

	// HidingObjects are the keys of objects named like the key prefix of an
	// agent or a session the job selects, which hide that prefix's segments
	// from the listings of some S3 servers (MinIO): the job cannot see, compact
	// or retain those sessions, and does not collect the payloads of their
	// namespace. They make the job exit 1.
	HidingObjects []string `json:"hidingObjects"`

	// Retention is set when a retention policy was applied (retention.go).
	Retention *retentionSummary `json:"retention,omitempty"`
}

// problems reports whether the run had a problem that makes the job exit 1 (and
// keeps it from counting as a success in the pushed metrics): a session that
// failed, a namespace whose payloads could not be collected, objects that hide
// sessions, or a retention failure or late write.
func (s *summary) problems() bool {
	return s.SessionsFailed > 0 || s.payloadsFailed > 0 || len(s.HidingObjects) > 0 || s.Retention.problems() > 0
}

// skippedSession is a session the job left as it was (or left some levels of)
// and why.
type skippedSession struct {
	Session string `json:"session"`
	Reason  string `json:"reason"`
}

// Why the job skips a session, besides the reasons transcript.CompactResult.Skipped gives.
const (
	reasonRecent    = "recent: a segment was stored less than --older-than ago"
	reasonContended = "contended: another compaction kept deleting what this one listed"
)

// skipReason returns why res says its session was skipped ("" when it was not).
func skipReason(res transcript.CompactResult) string {
	switch {
	case res.SkippedRecent:
		return reasonRecent
	case res.Contended:
		return reasonContended
	case res.Skipped != "":
		return res.Skipped
	}
	return ""
}

// inShard reports whether ref belongs to shard i of n, by a stable hash of the ref, so
// n workers split a bucket with no coordination and every session has one owner.
func inShard(ref transcript.TranscriptRef, i, n int) bool {
	if n <= 1 {
		return true
	}
	return xxhash.Sum64String(ref.String())%uint64(n) == uint64(i)
}

// sessions lists the refs the job selects (before the age filter), in lexical order.
func (j *job) sessions(ctx context.Context) ([]transcript.TranscriptRef, error) {
	namespaces := []string{j.namespace}
	if j.namespace == "" {
		var err error
		if namespaces, err = j.store.ListNamespaces(ctx); err != nil {
			return nil, err
		}
	}
	var refs []transcript.TranscriptRef
	for _, ns := range namespaces {
		agents := []string{j.agent}
		if j.agent == "" {
			var err error
			if agents, err = j.store.ListAgents(ctx, ns); err != nil {
				return nil, err
			}
		}
		for _, agent := range agents {
			ids := []string{j.session}
			if j.session == "" {
				var err error
				if ids, err = j.store.ListSessions(ctx, ns, agent); err != nil {
					return nil, err
				}
			}
			for _, id := range ids {
				ref := transcript.TranscriptRef{Namespace: ns, AgentID: agent, SessionID: id}
				if inShard(ref, j.shard, j.shards) {
					refs = append(refs, ref)
				}
			}
		}
	}
	return refs, nil
}

// run compacts every selected session, j.parallel at a time. A session that fails is
// reported in the summary and does not stop the others; run returns an error only
// when the job could not start (listing failed) or ctx ended.
func (j *job) run(ctx context.Context) (*summary, error) {
	start := time.Now()
	sum := &summary{Shard: fmt.Sprintf("%d/%d", j.shard, j.shards), DryRun: j.opts.DryRun, Errors: []string{}, Skipped: []skippedSession{},
		HidingObjects: []string{}}
	var err error
	if j.session == "" {
		err = j.runListed(ctx, sum)
	} else {
		err = j.runRefs(ctx, sum)
	}
	if err == nil {
		err = j.collectPayloads(ctx, sum)
	}
	j.progress.Finish()
	sum.DurationSeconds = time.Since(start).Seconds()
	if sum.DurationSeconds > 0 {
		sum.SessionsPerSecond = float64(sum.SessionsScanned) / sum.DurationSeconds
		sum.InputMBPerSecond = float64(sum.BytesIn) / 1e6 / sum.DurationSeconds
	}
	if err == nil {
		err = ctx.Err()
	}
	return sum, err
}

// runListed applies the retention policy, if any, then compacts the selected
// sessions of each selected namespace as one recursive listing finds them
// (Store.CompactAll): no LIST per session, and compactions start while the
// listing goes on.
func (j *job) runListed(ctx context.Context, sum *summary) error {
	namespaces := []string{j.namespace}
	if j.namespace == "" {
		var err error
		if namespaces, err = j.store.ListNamespaces(ctx); err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
	}
	if err := j.findHiding(ctx, sum, namespaces); err != nil {
		return err
	}
	if j.retention != nil {
		if err := j.retain(ctx, sum, namespaces); err != nil {
			return err
		}
	}
	j.progress.Total(-1)
	opts := j.opts
	opts.OlderThan = j.olderThan
	if j.shard == 0 {
		opts.Hidden = func(ref transcript.TranscriptRef, keys []string) {
			j.mu.Lock()
			defer j.mu.Unlock()
			j.reportHiding(sum, ref.Namespace, "session "+ref.String(), keys)
		}
	}
	keep := func(ref transcript.TranscriptRef) bool { return inShard(ref, j.shard, j.shards) && !j.retained[ref] }
	for _, ns := range namespaces {
		err := j.store.CompactAll(ctx, ns, j.agent, j.parallel, opts, keep,
			func(ref transcript.TranscriptRef, res transcript.CompactResult, err error) {
				defer j.progress.Done()
				j.mu.Lock()
				sum.SessionsListed++
				j.mu.Unlock()
				j.record(ctx, sum, ref, res, err)
			})
		if err != nil {
			return fmt.Errorf("list sessions: %w", err)
		}
	}
	return nil
}

// findHiding looks, in shard 0, for objects named like the key prefix of an
// agent or a session the job selects in each of namespaces
// (cli.HidingObjects): MinIO lists nothing under such a prefix, so its
// sessions are neither compacted nor retained, and their segments' references
// to payloads are not seen, which would make those payloads look unreferenced.
// It reports them (reportHiding). One delimited listing of each namespace and
// of each selected agent. The compaction's listing finds, and reports, those
// named like a folder of a session (CompactOptions.Hidden).
func (j *job) findHiding(ctx context.Context, sum *summary, namespaces []string) error {
	if j.shard != 0 {
		return nil // one worker reports them
	}
	if j.namespace == "" {
		if err := j.findHidingNamespaces(ctx, sum); err != nil {
			return err
		}
	}
	for _, ns := range namespaces {
		keys, err := cli.HidingObjects(ctx, j.store, ns, j.agent, "")
		if err != nil {
			return fmt.Errorf("look for objects hiding sessions in namespace %s: %w", ns, err)
		}
		if len(keys) > 0 {
			j.reportHiding(sum, ns, "namespace "+ns, keys)
		}
	}
	return nil
}

// findHidingNamespaces reports the objects directly under the store's key
// prefix named like a namespace: nothing of the layout lies there but the
// namespaces' prefixes, and MinIO lists nothing of a namespace whose prefix
// such an object hides, so a run over every namespace would skip it unseen.
// One delimited listing.
func (j *job) findHidingNamespaces(ctx context.Context, sum *summary) error {
	root := strings.TrimSuffix(cli.NamespaceKeyPrefix(j.store, "x"), "x/")
	var keys []string
	err := j.store.Bucket().List(ctx, bucket.ListOptions{Prefix: root, Delimited: true}, func(oi bucket.ObjectInfo) error {
		if !oi.IsPrefix && !transcript.IsDirectoryMarker(oi.Key) && transcript.ValidatePart("namespace", strings.TrimPrefix(oi.Key, root)) == nil {
			keys = append(keys, oi.Key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("look for objects hiding namespaces: %w", err)
	}
	if len(keys) > 0 {
		j.reportHiding(sum, "", "the store", keys)
	}
	return nil
}

// reportHiding reports keys, objects that hide segments of namespace ns from the
// listings, found in what (a namespace, a session), in the summary and on
// stderr, and marks ns hidden, so that collectPayloads leaves its payloads
// alone. The caller holds j.mu, or no other goroutine runs.
func (j *job) reportHiding(sum *summary, ns, what string, keys []string) {
	if j.hidden == nil {
		j.hidden = map[string]bool{}
	}
	j.hidden[ns] = true
	sum.HidingObjects = append(sum.HidingObjects, keys...)
	msg := "segments may be missing (neither compacted nor retained): " + cli.HidingHint(keys)
	sum.Errors = append(sum.Errors, what+": "+msg)
	fmt.Fprintf(j.errOut, "%s: %s\n", cli.Escape(what), msg)
}

// runRefs compacts the sessions j.sessions selects, j.parallel at a time.
func (j *job) runRefs(ctx context.Context, sum *summary) error {
	refs, err := j.sessions(ctx)
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	sum.SessionsListed = len(refs)
	j.progress.Total(len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, j.parallel))
	for _, ref := range refs {
		g.Go(func() error {
			defer j.progress.Done()
			if gctx.Err() != nil {
				return gctx.Err()
			}
			j.one(gctx, ref, sum)
			return nil
		})
	}
	return g.Wait()
}

// one compacts one session and adds its result to sum.
func (j *job) one(ctx context.Context, ref transcript.TranscriptRef, sum *summary) {
	opts := j.opts
	opts.OlderThan = j.olderThan
	res, err := j.store.Compact(ctx, ref, opts)
	j.record(ctx, sum, ref, res, err)
}

// record adds the result of one session's compaction to sum. A session that
// ctx, ended (SIGINT, SIGTERM), stopped part way is no failure: it is counted
// as left part way, and the next run finishes it.
func (j *job) record(ctx context.Context, sum *summary, ref transcript.TranscriptRef, res transcript.CompactResult, err error) {
	if errors.Is(err, bucket.ErrNotFound) {
		err = nil // deleted while the job ran: nothing to do
	}
	if err != nil && ctx.Err() != nil {
		j.mu.Lock()
		sum.partWay++
		j.mu.Unlock()
		return
	}
	if err != nil {
		j.fail(sum, ref, err)
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if why := skipReason(res); why != "" {
		sum.Skipped = append(sum.Skipped, skippedSession{Session: ref.String(), Reason: why})
	}
	if res.SkippedRecent {
		sum.SessionsSkipped++
		return
	}
	sum.SessionsScanned++
	if res.Contended {
		sum.SessionsContended++
	}
	if len(res.Compactions) > 0 {
		sum.SessionsCompacted++
	}
	sum.SegmentsIn += res.SegmentsIn()
	sum.SegmentsOut += res.SegmentsOut()
	sum.BytesIn += res.BytesIn()
	sum.BytesOut += res.BytesOut()
	sum.Marks += res.Marked
	sum.Deletions += res.Deleted
	sum.PendingDeletions += res.Pending
	sum.Uncommitted += res.Uncommitted
	if j.opts.DryRun {
		for _, c := range res.Compactions {
			fmt.Fprintf(j.out, "plan %s: %d %s segments (%d bytes) -> L%d of %d entries (%d bytes)\n",
				ref, len(c.Inputs), inputLevels(c), c.BytesIn, c.Level+1, c.Entries, c.BytesOut)
		}
		if res.Marked > 0 || res.Deleted > 0 {
			fmt.Fprintf(j.out, "plan %s: mark %d superseded segments, delete %d whose delay has passed\n",
				ref, res.Marked, res.Deleted)
		}
	}
}

// fail records that ref failed with err and reports it on stderr.
func (j *job) fail(sum *summary, ref transcript.TranscriptRef, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	sum.SessionsScanned++
	sum.SessionsFailed++
	sum.Errors = append(sum.Errors, err.Error())
	fmt.Fprintf(j.errOut, "session %s: %s\n", ref, cli.Escape(err.Error()))
}

// inputLevels names the levels of a compaction's inputs: "L1", or "L0-L2" for a
// full compaction of several levels.
func inputLevels(c transcript.Compaction) string {
	lo := c.Level
	for _, in := range c.Inputs {
		lo = min(lo, in.Level)
	}
	if lo == c.Level {
		return fmt.Sprintf("L%d", lo)
	}
	return fmt.Sprintf("L%d-L%d", lo, c.Level)
}
