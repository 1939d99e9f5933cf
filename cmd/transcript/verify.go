package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/transcript"
)

const verifyUsage = `
Usage: transcript verify [flags] [[NAMESPACE/]AGENT/SESSION ...]

Reads and verifies every segment of the given sessions, or of the whole store: the
zstd stream, the metadata, the checksum, the key's checksum, and that every entry has
an id. Prints one line per problem and a closing count; exits 1 if it found any.
Read-only: it changes nothing.

Examples:
  transcript verify
  transcript verify --namespace acme
  transcript verify default/coder/6d4c2f18
`

// verifyProblem is one problem found by verify.
type verifyProblem struct {
	Session string `json:"session"`
	Key     string `json:"key,omitempty"`
	Problem string `json:"problem"`
}

// verifySummary is verify's result.
type verifySummary struct {
	Sessions  int             `json:"sessions"`
	Segments  int             `json:"segments"`
	Entries   int             `json:"entries"`
	Conflicts int             `json:"conflicts"`
	Problems  []verifyProblem `json:"problems"`
}

func runVerify(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "verify", verifyUsage)
	if err := parse(fs, args); err != nil {
		return err
	}
	s, refs, err := sf.openSessions(ctx, fs.Args())
	if err != nil {
		return err
	}
	defer s.Close()

	sum := verifySummary{Problems: []verifyProblem{}}
	report := func(p verifyProblem) {
		sum.Problems = append(sum.Problems, p)
		if !sf.json {
			fmt.Fprintf(env.stdout, "%s %s: %s\n", p.Session, p.Key, p.Problem)
		}
	}
	check := func(ref transcript.TranscriptRef) error {
		sum.Sessions++
		segs, err := s.ListSegments(ctx, ref)
		if err != nil {
			return err
		}
		if len(segs) == 0 {
			report(verifyProblem{Session: ref.String(), Problem: "no segments"})
		}
		seen := map[string][]byte{}
		for _, info := range segs {
			sum.Segments++
			seg, err := s.ReadSegment(ctx, info.Key)
			if errors.Is(err, transcript.ErrNotFound) {
				continue // deleted since the listing (compaction): not a problem
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				report(verifyProblem{Session: ref.String(), Key: info.Key, Problem: err.Error()})
				continue
			}
			if seg.Meta.Checksum != info.Hash {
				report(verifyProblem{Session: ref.String(), Key: info.Key,
					Problem: fmt.Sprintf("key names checksum %016x, segment has %016x", info.Hash, seg.Meta.Checksum)})
			}
			for pos, raw := range seg.Entries {
				e, err := transcript.ParseEntry(raw)
				if err != nil {
					report(verifyProblem{Session: ref.String(), Key: info.Key, Problem: fmt.Sprintf("entry %d: %v", pos, err)})
					continue
				}
				if prev, ok := seen[e.ID]; ok {
					if string(prev) != string(raw) {
						sum.Conflicts++
					}
					continue
				}
				seen[e.ID] = raw
				sum.Entries++
			}
		}
		return nil
	}
	for _, ref := range refs {
		if err := check(ref); err != nil {
			return err
		}
	}
	if sf.json {
		if err := writeJSON(env.stdout, sum); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(env.stdout, "%d problems in %d segments of %d sessions (%d entries, %d conflicting ids)\n",
			len(sum.Problems), sum.Segments, sum.Sessions, sum.Entries, sum.Conflicts)
	}
	if len(sum.Problems) > 0 {
		return errProblems
	}
	return nil
}
