package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const lsUsage = `
Usage: transcript ls [flags]

Lists the sessions of --ns (only those of --agent, or the one --session, when given)
with their entry counts (the session header not counted), segment counts, bytes and last update (the creation time of the
newest segment). SEGMENTS counts the segments a read of the session uses: once
compaction has merged segments into one of the next level, the merged ones are no
longer read but stay stored until their delete delay has passed, so 'stats' and
'ls --segments', which count every stored segment, may show more. With --segments
it lists each session's stored segments instead. --json prints one JSON object per
line. A session that cannot be read (a corrupt segment) is reported on stderr after
the others are listed, and the exit code is 1.

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
	s, refs, err := sf.parseSelection(ctx, fs, args, parallel, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	if *segments {
		return lsSegments(ctx, env, s, refs, sf.json)
	}
	infos := make([]sessionInfo, len(refs))
	failed := make([]error, len(refs))
	stored := s.Stored() // counts need no payload
	err = forEachSession(ctx, *parallel, refs, func(ctx context.Context, i int, ref transcript.TranscriptRef) error {
		res, err := stored.ReadAll(ctx, ref)
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
