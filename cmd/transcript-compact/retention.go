package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/spf13/pflag"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
)

// retentionFlags are the flags that set the retention policy.
type retentionFlags struct {
	file     string
	maxAge   string
	keepLast int
	holds    []string
}

func (f *retentionFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "retention", "", "apply the retention policy `FILE` (YAML: rules by namespace and agent, holds; docs/RETENTION.md)")
	fs.StringVar(&f.maxAge, "max-age", "", "delete sessions whose last update is older than `AGE` by the bucket's clock (720h, 30d)")
	fs.IntVar(&f.keepLast, "keep-last", 0, "keep at most `N` sessions per agent, the last written (a compacted one by its entries' writes), and delete the others")
	fs.StringArrayVar(&f.holds, "hold", nil, "never delete `NS/AGENT/SESSION` (an element may be *; repeatable)")
}

// retention returns the policy the flags set, or nil when they set none. --max-age
// and --keep-last make one rule for every namespace and agent the job selects. A
// policy with --session (session, when not "") is refused: keep-last ranks every
// session of an agent. A policy flag given (changed reports which were) with an
// empty or zero value is refused too, rather than read as no policy at all: it
// is a cron line whose variable is unset, or --keep-last 0 meant as "keep none".
func (f *retentionFlags) retention(session string, changed func(flag string) bool) (*transcript.Retention, error) {
	switch {
	case changed("keep-last") && f.keepLast < 1:
		return nil, cli.Usagef("--keep-last %d: want at least 1", f.keepLast)
	case changed("max-age") && f.maxAge == "":
		return nil, cli.Usagef("--max-age %q: want a positive duration such as 720h, 90m or 30d", f.maxAge)
	case changed("retention") && f.file == "":
		return nil, cli.Usagef("--retention: no FILE given")
	}
	r, err := f.policy()
	if r != nil && session != "" {
		return nil, cli.Usagef("--session with a retention policy: keep-last ranks every session of an agent; select by --agent")
	}
	return r, err
}

// policy returns the policy the flags set, or nil when they set none.
func (f *retentionFlags) policy() (*transcript.Retention, error) {
	r := &transcript.Retention{}
	switch {
	case f.file != "" && (f.maxAge != "" || f.keepLast != 0):
		return nil, cli.Usagef("--retention takes the rules from its file: drop --max-age and --keep-last")
	case f.file != "":
		var err error
		if *r, err = readRetentionFile(f.file); err != nil {
			return nil, cli.Usagef("--retention: %v", err)
		}
	case f.maxAge != "" || f.keepLast != 0:
		rule := transcript.RetentionRule{Namespace: transcript.AnyName, Agent: transcript.AnyName}
		if f.maxAge != "" {
			d, err := parseAge(f.maxAge)
			if err != nil {
				return nil, cli.Usagef("--max-age %v", err)
			}
			rule.Policy.MaxAge = d
		}
		if f.keepLast != 0 {
			if f.keepLast < 1 {
				return nil, cli.Usagef("--keep-last %d: want at least 1", f.keepLast)
			}
			rule.Policy.KeepLast = f.keepLast
		}
		r.Rules = append(r.Rules, rule)
	case len(f.holds) > 0:
		return nil, cli.Usagef("--hold needs a policy: --max-age, --keep-last or --retention")
	default:
		return nil, nil
	}
	for _, s := range f.holds {
		h, err := transcript.ParseHold(s)
		if err != nil {
			return nil, cli.Usagef("--hold: %s", strings.TrimPrefix(err.Error(), transcript.ErrInvalidRetention.Error()+": "))
		}
		r.Holds = append(r.Holds, h)
	}
	return r, nil
}

// retentionSummary is the retention part of the job's summary.
type retentionSummary struct {
	SessionsExamined int   `json:"sessionsExamined"`
	Marked           int   `json:"marked"`
	Pending          int   `json:"pending"`
	Deleted          int   `json:"deleted"`
	KeptByHold       int   `json:"keptByHold"`
	Survived         int   `json:"survived"`
	Released         int   `json:"released"`
	LateWrites       int   `json:"lateWrites"`
	Deferred         int   `json:"deferred"`
	Failed           int   `json:"failed"`
	ObjectsDeleted   int   `json:"objectsDeleted"`
	BytesDeleted     int64 `json:"bytesDeleted"`
	// RankReads counts the ranged GETs of compacted segments' metadata that
	// keep-last's ranking cost (transcript.RetentionResult.RankReads).
	RankReads int `json:"rankReads"`
	// UnmatchedHolds are the holds that named no session the run examined,
	// though they could have (unmatchedHolds): a misspelt hold protects nothing.
	UnmatchedHolds []string `json:"unmatchedHolds,omitempty"`
	// UnmatchedRules name, as "namespace NS, agent A", the rules naming a
	// namespace or an agent that named no agent the run examined, though they
	// could have: a misspelt rule (namespace ACME for acme) deletes nothing.
	UnmatchedRules []string `json:"unmatchedRules,omitempty"`
}

// problems counts the sessions that make the job exit 1.
func (r *retentionSummary) problems() int {
	if r == nil {
		return 0
	}
	return r.Failed + r.LateWrites
}

// setRetentionOutput sets where the retention reports: its progress bar on
// stderr, its dry-run plan on stdout, or stderr with --json (stdout holds the
// summary alone).
func (j *job) setRetentionOutput(stdout, stderr io.Writer, jsonOut bool) {
	j.retainProgress = newProgress(stderr, "retention: sessions")
	j.retained = map[transcript.TranscriptRef]bool{}
	j.planOut = stdout
	if jsonOut {
		j.planOut = stderr
	}
}

// agentInShard reports whether the agent of namespace belongs to shard i of n, by a
// stable hash: retention decides all the sessions of one agent in one worker, since
// keep-last ranks them together.
func agentInShard(namespace, agent string, i, n int) bool {
	if n <= 1 {
		return true
	}
	return xxhash.Sum64String(namespace+"/"+agent)%uint64(n) == uint64(i)
}

// retain applies the retention policy to the selected namespaces and agents of
// this shard, before compaction: sessions it marks or deletes are not compacted.
func (j *job) retain(ctx context.Context, sum *summary, namespaces []string) error {
	rs := &retentionSummary{}
	sum.Retention = rs
	j.retainProgress.Total(-1)
	defer j.retainProgress.Finish()
	opts := transcript.RetentionOptions{DeleteDelay: j.opts.DeleteDelay, DryRun: j.opts.DryRun, Parallel: j.parallel,
		OwnAgent: func(ns, agent string) bool { return agentInShard(ns, agent, j.shard, j.shards) }}
	// What the policy names, to say what named nothing: the holds, then the
	// namespace and agent of each rule that names one.
	names := slices.Clone(j.retention.Holds)
	var rules []transcript.RetentionRule
	for _, r := range j.retention.Rules {
		if r.Namespace != transcript.AnyName || r.Agent != transcript.AnyName {
			rules = append(rules, r)
			names = append(names, transcript.Hold{Namespace: r.Namespace, Agent: r.Agent, Session: transcript.AnyName})
		}
	}
	matched := make([]bool, len(names))
	for _, ns := range namespaces {
		err := j.store.Retain(ctx, ns, j.agent, j.retention, opts, func(res transcript.RetentionResult, err error) {
			defer j.retainProgress.Done()
			j.recordRetention(ctx, sum, res, err)
			j.mu.Lock()
			defer j.mu.Unlock()
			for i, h := range names {
				matched[i] = matched[i] || h.Holds(res.Ref)
			}
		})
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
	}
	for i, h := range names {
		switch {
		case matched[i] || !j.holdInScope(h):
		case i < len(j.retention.Holds):
			rs.UnmatchedHolds = append(rs.UnmatchedHolds, h.String())
			fmt.Fprintf(j.errOut, "retention: hold %s names no session this run examined: check its spelling\n", cli.Escape(h.String()))
		default:
			r := rules[i-len(j.retention.Holds)]
			what := fmt.Sprintf("namespace %s, agent %s", r.Namespace, r.Agent)
			rs.UnmatchedRules = append(rs.UnmatchedRules, what)
			fmt.Fprintf(j.errOut, "retention: the rule for %s (%s) names no agent this run examined: check its spelling\n",
				cli.Escape(what), r.Policy)
		}
	}
	return nil
}

// holdInScope reports whether h could name a session this run examines: its
// namespace and agent are not others than --ns and --agent select, and, in a
// sharded run, it names one agent, of this shard (a wildcard may match in
// another worker's agents).
func (j *job) holdInScope(h transcript.Hold) bool {
	norm := transcript.TranscriptRef{Namespace: h.Namespace, AgentID: h.Agent, SessionID: "s"}.Norm()
	anyNS, anyAgent := h.Namespace == transcript.AnyName, h.Agent == transcript.AnyName
	sel := transcript.TranscriptRef{Namespace: j.namespace, AgentID: j.agent, SessionID: "s"}.Norm()
	switch {
	case j.namespace != "" && !anyNS && norm.Namespace != sel.Namespace,
		j.agent != "" && !anyAgent && norm.AgentID != sel.AgentID:
		return false
	case j.shards > 1:
		return !anyNS && !anyAgent && agentInShard(norm.Namespace, norm.AgentID, j.shard, j.shards)
	}
	return true
}

// recordRetention adds the result of one session to the summary and reports it:
// in a dry run a plan line, else a line on stderr for every change. A session
// that ctx, ended, stopped part way is counted as such, not as failed.
func (j *job) recordRetention(ctx context.Context, sum *summary, res transcript.RetentionResult, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		sum.partWay++
		return
	}
	rs := sum.Retention
	rs.SessionsExamined++
	rs.RankReads += res.RankReads
	ref := cli.Escape(res.Ref.String())
	if err != nil {
		rs.Failed++
		sum.Errors = append(sum.Errors, fmt.Sprintf("retention %s: %v", res.Ref, err))
		fmt.Fprintf(j.errOut, "retention %s: %s\n", ref, cli.Escape(err.Error()))
		return
	}
	switch res.Action {
	case transcript.RetentionMarked, transcript.RetentionPending:
		j.retained[res.Ref] = true // to be deleted: not worth compacting
	case transcript.RetentionDeleted:
		// Gone, or in a dry run still there: either way nothing to compact, and a
		// dry run plans what the run would do.
		j.retained[res.Ref] = true
		rs.ObjectsDeleted += res.Objects
		rs.BytesDeleted += res.Bytes
	}
	counter := map[transcript.RetentionAction]*int{
		transcript.RetentionMarked: &rs.Marked, transcript.RetentionPending: &rs.Pending,
		transcript.RetentionDeleted: &rs.Deleted, transcript.RetentionHeld: &rs.KeptByHold,
		transcript.RetentionSurvived: &rs.Survived, transcript.RetentionReleased: &rs.Released,
		transcript.RetentionLateWrite: &rs.LateWrites, transcript.RetentionDeferred: &rs.Deferred,
	}[res.Action]
	if counter != nil {
		*counter++
	}
	line := retentionLine(res)
	switch {
	case line == "":
	case j.opts.DryRun:
		fmt.Fprintf(j.planOut, "retention plan %s: %s\n", ref, line)
	case res.Action == transcript.RetentionLateWrite:
		sum.Errors = append(sum.Errors, fmt.Sprintf("retention %s: %s", res.Ref, line))
		fmt.Fprintf(j.errOut, "retention %s: %s\n", ref, line)
	case res.Action != transcript.RetentionPending:
		fmt.Fprintf(j.errOut, "retention %s: %s\n", ref, line)
	}
}

// retentionLine describes what was done to a session (in a dry run: what would
// be), or "" when nothing was.
func retentionLine(res transcript.RetentionResult) string {
	why := cli.Escape(res.Reason)
	switch res.Action {
	case transcript.RetentionMarked:
		return "marked for deletion (" + why + ")"
	case transcript.RetentionPending:
		return "marked, waiting for the delete delay (" + why + ")"
	case transcript.RetentionDeleted:
		return fmt.Sprintf("deleted, %s of %d bytes (%s)", cli.Count(res.Objects, "object"), res.Bytes, why)
	case transcript.RetentionHeld:
		return "kept by a hold (" + why + ")"
	case transcript.RetentionSurvived:
		return fmt.Sprintf("survived: %s written since it was marked (%s)", cli.Count(len(res.Unseen), "segment"), cli.Escape(strings.Join(res.Unseen, " ")))
	case transcript.RetentionReleased:
		return "mark dropped: no policy selects it now (marked for " + why + ")"
	case transcript.RetentionDeferred:
		return "selected, but written or compacted since this run listed it: left for the next run (" + why + ")"
	case transcript.RetentionLateWrite:
		return fmt.Sprintf("deleted, but %s landed while it was deleted and remain without the older entries: %s",
			cli.Count(len(res.Unseen), "segment"), cli.Escape(strings.Join(res.Unseen, " ")))
	}
	return ""
}

// printRetentionSummary prints the retention part of the summary as one line.
func printRetentionSummary(w io.Writer, rs *retentionSummary, dryRun bool) {
	mark, del := "marked", "deleted"
	if dryRun {
		mark, del = "would mark", "would delete"
	}
	fmt.Fprintf(w, "retention: %s examined; %s %d, %s %d (%s, %d bytes); %d waiting for their delay, %d kept by a hold, %d survived (written during the delay), %d released, %d left for the next run (written since listed), %d written while deleted, %d failed\n",
		cli.Count(rs.SessionsExamined, "session"), mark, rs.Marked, del, rs.Deleted, cli.Count(rs.ObjectsDeleted, "object"), rs.BytesDeleted,
		rs.Pending, rs.KeptByHold, rs.Survived, rs.Released, rs.Deferred, rs.LateWrites, rs.Failed)
	if rs.RankReads > 0 {
		fmt.Fprintf(w, "retention: keep-last ranked the compacted sessions by their entries' writes: %s of compacted segments' metadata\n",
			cli.Count(rs.RankReads, "ranged read"))
	}
}
