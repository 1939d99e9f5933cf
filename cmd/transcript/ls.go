package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const lsUsage = `
Usage: transcript ls [flags]

Lists the sessions of --ns (only those of --agent, or the one --session, when given)
with their entry counts (the session header not counted), segment counts, bytes and last update (the creation time of the
newest segment). Sessions are read --parallel at a time, and together at most
--read-mib MiB of stored segments at once (a session larger than that is read
alone), so that listing sessions of gigabytes does not need gigabytes per session
read at once. SEGMENTS counts the segments a read of the session uses: once
compaction has merged segments into one of the next level, the merged ones are no
longer read but stay stored until their delete delay has passed, so 'stats' and
'ls --segments', which count every stored segment, may show more. With --segments
it lists each session's stored segments instead. --json prints one JSON object per
line. A session that cannot be read (a corrupt segment) is reported on stderr after
the others are listed, and the exit code is 1. An object named exactly like an
agent's or a session's key prefix (an S3 tool's copy of a file to acme/coder/s1)
hides the segments under that prefix from the listings of some S3 servers
(MinIO), and with them the session: without --session, ls warns of such objects
on stderr (it lists the namespace's and each agent's own objects for that, one
listing each, a small part of what reading the sessions costs); when nothing else
is listed, it fails naming them. verify names them as problems.

Examples:
  transcript ls
  transcript ls --ns acme --agent coder --json
  transcript ls --agent coder --session s1 --segments
`

// sessionInfo is one line of ls.
type sessionInfo struct {
	Namespace string    `json:"namespace"`
	Agent     string    `json:"agent"`
	Session   string    `json:"session"`
	Entries   int       `json:"entries"`
	Segments  int       `json:"segments"`
	Bytes     int64     `json:"bytes"`
	Updated   time.Time `json:"updated"`
}

// segmentLine is one line of ls --segments.
type segmentLine struct {
	Session string    `json:"session"`
	Key     string    `json:"key"`
	Level   int       `json:"level"`
	Writer  string    `json:"writer"`
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Bytes   int64     `json:"bytes"`
}

func runLs(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "ls", lsUsage, true)
	segments := fs.Bool("segments", false, "list the segments of each session")
	parallel := fs.Int("parallel", cmdcli.DefaultParallel, "sessions read at once")
	readMiB := fs.Int64("read-mib", defaultReadMiB, "stored MiB of the sessions read at once (a larger session is read alone)")
	s, refs, err := sf.parseSelection(ctx, fs, args, parallel, func() error {
		if *readMiB < 1 {
			return usagef("ls: --read-mib must be at least 1")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.Close()
	// The objects hiding sessions are looked for while the sessions are read,
	// and warned of last.
	hidden := hidingLater(ctx, s, sf)
	defer func() {
		if h := hidden(); len(h) > 0 {
			fmt.Fprintf(env.stderr, "Warning: sessions may be missing: %s (run transcript verify)\n", cmdcli.HidingHint(h))
		}
	}()
	if *segments {
		return lsSegments(ctx, env, s, refs, sf.json)
	}
	infos := make([]sessionInfo, len(refs))
	failed := make([]error, len(refs))
	stored := s.Stored() // counts need no payload
	budget := newReadBudget(*readMiB << 20)
	err = forEachSession(ctx, *parallel, refs, func(ctx context.Context, i int, ref transcript.TranscriptRef) error {
		res, release, err := budget.readAll(ctx, stored, ref)
		defer release()
		if errors.Is(err, bucket.ErrNotFound) && sf.notASession(ctx, s, ref) {
			failed[i] = errNotASession // not printed, not a problem
			return nil
		}
		if err != nil && ctx.Err() == nil {
			failed[i] = fmt.Errorf("session %s: %w (run transcript verify)", ref, err)
			return nil
		}
		if err != nil {
			return err
		}
		info := sessionInfo{Namespace: ref.Namespace, Agent: ref.AgentID, Session: ref.SessionID,
			Segments: len(res.Segments)}
		for _, e := range res.Entries {
			if _, err := pi.ParseHeader(e.Raw); err != nil {
				info.Entries++ // the session header is not counted, as in verify and restore
			}
		}
		for _, seg := range res.Segments {
			info.Bytes += seg.Size
			if seg.Time.After(info.Updated) {
				info.Updated = seg.Time
			}
		}
		infos[i] = info
		return nil
	})
	if err != nil {
		return err
	}
	if err := printSessions(env, infos, failed, sf.json); err != nil {
		return err
	}
	problems := false
	for _, err := range failed {
		if err != nil && err != errNotASession {
			fmt.Fprintf(env.stderr, "Error: %v\n", err)
			problems = true
		}
	}
	if problems {
		return errProblems
	}
	return nil
}

// defaultReadMiB is the default of ls --read-mib.
const defaultReadMiB = 256

// readBudget bounds the stored bytes of the sessions read at once: each read
// takes its session's listed size from it first (all of it, when the session
// is larger: it is then read alone).
type readBudget struct {
	sem *semaphore.Weighted
	max int64
}

// newReadBudget returns a budget of limit bytes (at least 1).
func newReadBudget(limit int64) readBudget {
	limit = max(limit, 1)
	return readBudget{sem: semaphore.NewWeighted(limit), max: limit}
}

// acquire takes n bytes (at most the whole budget) and returns what releases
// them.
func (b readBudget) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(max(n, 1), b.max)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { b.sem.Release(n) }, nil
}

// readAll reads session ref through s (ReadAll) within the budget: it lists the
// session's segments, takes their stored size, and reads them with that listing
// in hand (ReadAllKnown: the same result as ReadAll of that listing; it lists
// again while the GETs run, so the read costs one round trip more than a
// ReadAll at most). A strict session (the listing showed its head) is read as
// its head commits it instead, as the server reads it (ReadHead, then
// ReadCommitted: the segments it names, without listing again). The caller
// calls release (never nil) once it is done with the result: until then the
// bytes stay taken.
func (b readBudget) readAll(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef) (res *transcript.MergeResult, release func(), err error) {
	release = func() {}
	infos, strict, err := s.ListSegmentsHead(ctx, ref)
	if err != nil {
		return nil, release, err
	}
	var size int64
	for _, in := range infos {
		size += in.Size
	}
	if release, err = b.acquire(ctx, size); err != nil {
		return nil, func() {}, err
	}
	if !strict {
		res, err = s.ReadAllKnown(ctx, ref, infos)
		return res, release, err
	}
	res, err = readCommitted(ctx, s, ref, infos)
	return res, release, err
}

// readCommitted reads strict session ref, listed as infos, as its head commits
// it (see sessionReader), with the stored size of each segment the listing
// showed.
func readCommitted(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, infos []transcript.SegmentInfo) (*transcript.MergeResult, error) {
	r := newSessionReader(s, ref)
	inc, err := r.readCommitted(ctx)
	if err != nil {
		return nil, err
	}
	size := make(map[string]int64, len(infos))
	for _, in := range infos {
		size[in.Key] = in.Size
	}
	for i := range inc.Segments {
		if n, ok := size[inc.Segments[i].Key]; ok {
			inc.Segments[i].Size = n
		}
	}
	return inc.MergeResult, nil
}

// printSessions prints the sessions read (those without a failure) as a table or as
// JSON lines.
func printSessions(env *cliEnv, infos []sessionInfo, failed []error, asJSON bool) error {
	if asJSON {
		for i, info := range infos {
			if failed[i] != nil {
				continue
			}
			if err := writeJSON(env.stdout, info); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tAGENT\tSESSION\tENTRIES\tSEGMENTS\tBYTES\tUPDATED")
	for k, i := range infos {
		if failed[k] != nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", cmdcli.Escape(i.Namespace), cmdcli.Escape(i.Agent), cmdcli.Escape(i.Session),
			i.Entries, i.Segments, i.Bytes,
			i.Updated.Format(time.RFC3339))
	}
	return tw.Flush()
}

func lsSegments(ctx context.Context, env *cliEnv, s *transcript.Store, refs []transcript.TranscriptRef, asJSON bool) error {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "KEY\tLEVEL\tWRITER\tBYTES")
	}
	for _, ref := range refs {
		segs, err := s.ListSegments(ctx, ref)
		if err != nil {
			return err
		}
		for _, seg := range segs {
			if asJSON {
				err = writeJSON(env.stdout, segmentLine{Session: ref.String(), Key: seg.Key, Level: seg.Level, Writer: seg.WriterID,
					Seq: seg.Seq, Time: seg.Time, Bytes: seg.Size})
			} else {
				_, err = fmt.Fprintf(tw, "%s\tL%d\t%s\t%d\n", cmdcli.Escape(seg.Key), seg.Level, cmdcli.Escape(seg.WriterID), seg.Size)
			}
			if err != nil {
				return err
			}
		}
	}
	return tw.Flush()
}

// forEachSession calls fn for every ref, at most parallel at once; the first error
// cancels the rest and is returned.
func forEachSession(ctx context.Context, parallel int, refs []transcript.TranscriptRef,
	fn func(ctx context.Context, i int, ref transcript.TranscriptRef) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, ref := range refs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i, ref) })
	}
	return g.Wait()
}

// hidingLater runs hidingObjects in the background and returns a function that
// waits for its answer (the same answer on every call).
func hidingLater(ctx context.Context, s *transcript.Store, sf *storeFlags) func() []string {
	ch := make(chan []string, 1)
	go func() { ch <- hidingObjects(ctx, s, sf) }()
	var once sync.Once
	var h []string
	return func() []string {
		once.Do(func() { h = <-ch })
		return h
	}
}

// hidingObjects returns the objects, in the namespace and the agents sf
// selects, named like the key prefix of an agent or a session (see
// cmdcli.HidingObjects), which hide from MinIO's listings the sessions under
// that prefix: the selection listed other sessions, so without a warning the
// hidden ones would be left out silently. With --session, which was listed,
// nothing can be hidden. A failure to list gives none: the reads report it.
func hidingObjects(ctx context.Context, s *transcript.Store, sf *storeFlags) []string {
	if sf.Session != "" {
		return nil
	}
	hiding, err := cmdcli.HidingObjects(ctx, s, sf.Namespace, sf.Agent, "")
	if err != nil {
		return nil
	}
	return hiding
}
