package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const verifyUsage = `
Usage: transcript verify [flags]

Reads every segment of --ns (only those of --agent, or of the one --session, when
given) and checks it: the zstd stream and metadata decode, the checksum matches the
data and the key, every entry is a JSON object with an id. Every compacted segment
is checked against each input it names that still exists: a segment that claims an
input whose entries it does not all hold (forged or damaged) is a problem naming
both keys. Keys under a session that are not part of the layout (not a segment, a
deletion mark or the head; readers ignore them) are named too, and so are deletion
marks the compaction job ignores (their content is not a mark), and objects directly
under the namespace's or an agent's key prefix (none with --session, only the
agent's with --agent). A segment a deletion mark names as a compaction's input
is lost when it is missing together with the compacted segment and no other
segment holds its entries (a copy of the bucket that left both out): verify
names it, and so an active leaf or an entry count that the summary object a
list cached beside a session names and its segments no longer hold. Such an object named like an agent's or a session's key prefix
(an S3 tool's copy of a file to acme/coder/s1) hides what is stored under that
prefix from the listings of some S3 servers (MinIO): verify says so, and names it
as a problem also when it hides every session asked for. Then it checks each
session's tree: entries whose parent is missing (dangling), parent cycles, ids
that carry different contents in different segments (conflicts), more than one
session header (one line naming each), and context edits
whose target is not an entry before them on their branch (or that have no
replacement). Every payload reference (a large image or tool output
the store keeps once, outside the segments) must resolve to a payload object
that decompresses to the size and SHA-256 the reference names; with --no-payloads
verify only asks whether each object exists and reads no payload. Ids and text from
segments are printed escaped when they hold control or invisible characters. Prints one line per
problem and a closing count; exits 1 if it found any. Read-only: it changes nothing.

Examples:
  transcript verify
  transcript verify --ns acme --json
  transcript verify --agent coder --session s1
  transcript verify --no-payloads
`

// verifyProblem is one problem found by verify.
type verifyProblem struct {
	Session string `json:"session"`
	Key     string `json:"key,omitempty"`
	Problem string `json:"problem"`
}

// verifySummary is verify's result.
type verifySummary struct {
	Sessions int             `json:"sessions"`
	Segments int             `json:"segments"`
	Entries  int             `json:"entries"`  // distinct entry ids, session headers not counted
	Headers  int             `json:"headers"`  // session headers
	Payloads int             `json:"payloads"` // distinct payloads referenced
	Problems []verifyProblem `json:"problems"`
}

// sessionCheck is what verify found in one session.
type sessionCheck struct {
	segments, entries, headers int
	problems                   []verifyProblem
	// absent: the listed prefix holds only directory markers (not a session).
	absent bool
	// payloads are the payloads the session's segments reference.
	payloads map[transcript.PayloadHash]payloadUse
}

func runVerify(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "verify", verifyUsage, true)
	parallel := fs.Int("parallel", cmdcli.DefaultParallel, "sessions checked at once")
	noPayloads := fs.Bool("no-payloads", false, "check that every payload object exists, without reading payloads")
	s, refs, err := sf.parseSelection(ctx, fs, args, parallel, nil)
	var hidden *cmdcli.HiddenError
	if errors.As(err, &hidden) {
		// Objects named like a key prefix hide every session asked for: they
		// are problems to name, not a selection that was not found.
		s, err = sf.openStore(ctx)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	if len(refs) == 1 {
		tightenGC(oneSessionGCPercent)
	}
	checks := make([]sessionCheck, len(refs))
	// Entries as stored: no payload is fetched with them. The segments' origins
	// and entry index, which verify does not use, are read packed and dropped
	// (checkedPart).
	stored := s.Stored().PackedReads()
	err = forEachSession(ctx, *parallel, refs, func(ctx context.Context, i int, ref transcript.TranscriptRef) error {
		var err error
		checks[i], err = checkSession(ctx, stored, ref)
		if err == nil && checks[i].segments == 0 && sf.notASession(ctx, s, ref) {
			checks[i].absent = true
		}
		return err
	})
	if err != nil {
		return err
	}
	sum := verifySummary{Problems: []verifyProblem{}}
	payloads, err := checkPayloads(ctx, s, checks, *parallel, !*noPayloads)
	if err != nil {
		return err
	}
	sum.Payloads = len(payloads.uses)
	for _, c := range checks {
		if c.absent {
			continue // only directory markers: not a session, no problem
		}
		sum.Sessions++
		sum.Segments += c.segments
		sum.Entries += c.entries
		sum.Headers += c.headers
		sum.Problems = append(sum.Problems, c.problems...)
	}
	sum.Problems = append(sum.Problems, payloads.problems...)
	stray, err := strayProblems(ctx, s, sf)
	if err != nil {
		return err
	}
	sum.Problems = append(sum.Problems, stray...)
	if hidden != nil {
		base := cmdcli.NamespaceKeyPrefix(s, sf.Namespace)
		for _, k := range hidden.Objects {
			if !slices.ContainsFunc(stray, func(p verifyProblem) bool { return p.Key == k }) {
				sum.Problems = append(sum.Problems, strayProblem(base, sf.Namespace, k))
			}
		}
	}
	if sf.json {
		if err := writeJSON(env.stdout, sum); err != nil {
			return err
		}
	} else {
		for _, p := range sum.Problems {
			if p.Key != "" {
				fmt.Fprintf(env.stdout, "%s: %s: %s\n", p.Session, cmdcli.Escape(p.Key), cmdcli.Escape(p.Problem))
			} else {
				fmt.Fprintf(env.stdout, "%s: %s\n", p.Session, cmdcli.Escape(p.Problem))
			}
		}
		fmt.Fprintf(env.stdout, "%s in %s of %s (%s, not counting %s)\n",
			cmdcli.Count(len(sum.Problems), "problem"), cmdcli.Count(sum.Segments, "segment"), cmdcli.Count(sum.Sessions, "session"),
			cmdcli.Count(sum.Entries, "entry"), cmdcli.Count(sum.Headers, "session header"))
	}
	if len(sum.Problems) > 0 {
		return errProblems
	}
	return nil
}

// strayProblems names the objects directly under the namespace's key prefix
// and its agents' (those verify covers: none when --session narrows it to one
// session, only the agent's with --agent), which no part of the layout puts
// there.
func strayProblems(ctx context.Context, s *transcript.Store, sf *storeFlags) ([]verifyProblem, error) {
	if sf.Session != "" {
		return nil, nil
	}
	type level struct{ where, agent string }
	var levels []level
	if sf.Agent == "" {
		levels = append(levels, level{sf.Namespace, ""})
		agents, err := s.ListAgents(ctx, sf.Namespace)
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			levels = append(levels, level{sf.Namespace + "/" + a, a})
		}
	} else {
		levels = append(levels, level{sf.Namespace + "/" + sf.Agent, sf.Agent})
	}
	var problems []verifyProblem
	base := cmdcli.NamespaceKeyPrefix(s, sf.Namespace)
	for _, l := range levels {
		keys, err := s.StrayObjects(ctx, sf.Namespace, l.agent)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			problems = append(problems, strayProblem(base, sf.Namespace, k))
		}
	}
	return problems, nil
}

// strayProblem is the problem of key, an object directly under the key prefix
// base of namespace ns or of one of its agents, where no part of the layout
// puts one. Named like the key prefix of an agent or a session (without its
// "/"), as an S3 tool names the copy of a file to acme/coder/s1, it also hides
// from the listings of some S3 servers (MinIO) whatever is stored under that
// prefix: the problem says so, naming that agent or session.
func strayProblem(base, ns, key string) verifyProblem {
	rel, _ := strings.CutPrefix(key, base)
	where, name := ns, rel
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		where, name = ns+"/"+rel[:i], rel[i+1:]
	}
	p := verifyProblem{Session: where, Key: key,
		Problem: "not part of the store's key layout, outside every session (readers ignore it)"}
	if strings.Count(rel, "/") <= 1 && transcript.ValidatePart("name", name) == nil {
		kind := "agent"
		if where != ns {
			kind = "session"
		}
		p.Problem += fmt.Sprintf("; named like the key prefix of %s %s/%s, it hides every segment stored under %s/ from the listings "+
			"of some S3 servers (MinIO), which then miss that %s: move or delete it", kind, ns, rel, key, kind)
	}
	return p
}

// checkSession reads and checks every segment of ref, then the tree their entries
// form. Only a failure to list (or a cancelled ctx) is an error; everything else is
// a problem.
func checkSession(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef) (sessionCheck, error) {
	for attempt := 1; ; attempt++ {
		c, vanished, err := checkSessionOnce(ctx, s, ref)
		if err != nil || vanished == 0 {
			return c, err
		}
		// A compaction deleted segments after the listing: their entries are in
		// its output, which the listing did not show, so what was read lacks
		// them (a header, a parent) though the session does not. Check anew.
		if attempt == verifyAttempts {
			c.problems = append(c.problems, verifyProblem{Session: ref.String(), Problem: fmt.Sprintf(
				"%s deleted while they were read, %d times (a compaction is running): the checks above may name entries its output holds; verify again",
				cmdcli.Count(vanished, "segment"), verifyAttempts)})
			return c, nil
		}
	}
}

// verifyAttempts bounds how many times checkSession checks a session whose
// segments a compaction deletes while they are read.
const verifyAttempts = 3

// checkSessionOnce is one attempt of checkSession: it reads and checks ref's
// segments as one listing shows them, and also returns how many of them were
// deleted before they could be read.
func checkSessionOnce(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef) (sessionCheck, int, error) {
	v := &sessionVerifier{s: s, ref: ref, seen: map[string]int32{}, c: sessionCheck{payloads: map[transcript.PayloadHash]payloadUse{}}}
	marks, summary := v.readMarksAsync(ctx), v.readSummaryAsync(ctx)
	// A strict session's head is read before the listing, so that every segment
	// it names was written before the listing (see checkHead).
	head, headErr := s.ReadHead(ctx, ref)
	if headErr != nil && !errors.Is(headErr, bucket.ErrNotFound) && !errors.Is(headErr, transcript.ErrInvalidHead) {
		return v.c, 0, headErr
	}
	// One listing gives the segments and what else lies under the prefix.
	segs, left, err := s.ListSegmentsWithLeftovers(ctx, ref)
	if err != nil {
		return v.c, v.vanished, err
	}
	if len(segs) == 0 {
		v.report("", "no segments")
	}
	tightenForStored(segs)
	v.segs, v.bodies, v.decoded = segs, make([][][]byte, len(segs)), make([]*segment.Segment, len(segs))
	v.refs = make([][]segment.PayloadRef, len(segs))
	read := tightenForRead()
	for i, info := range segs {
		if err := v.readSegment(ctx, i, info); err != nil {
			read()
			return v.c, v.vanished, err
		}
	}
	read()
	v.checkHeaders()
	v.checkCompacted()
	if err := v.checkMarkedLoss(marks); err != nil {
		return v.c, v.vanished, err
	}
	if err := v.checkHead(ctx, head, headErr); err != nil {
		return v.c, v.vanished, err
	}
	for _, k := range left.Stray {
		v.report(k, "not a segment, deletion mark or head of this session's key layout (readers ignore it)")
	}
	for _, k := range left.IgnoredMarks {
		v.report(k, "a deletion mark that is not one: its content is not a mark, or names another segment than its key (the compaction job ignores it and never removes it)")
	}
	v.c.entries = len(v.order) - v.c.headers
	if err := v.checkSummary(summary, headErr == nil || !errors.Is(headErr, bucket.ErrNotFound)); err != nil {
		return v.c, v.vanished, err
	}
	v.checkTree()
	return v.c, v.vanished, nil
}

// verifiedEntry is the first version of an id verify read, by its place in
// order. The tree check keeps its state there too, so that a session costs one
// map and one slice element per entry.
type verifiedEntry struct {
	id, parentID string
	seg, pos     int32 // index in segs, position in the segment
	state        uint8 // of the cycle search (checkTree)
}

// sessionVerifier is the state of one checkSession.
type sessionVerifier struct {
	s        *transcript.Store
	ref      transcript.TranscriptRef
	c        sessionCheck
	segs     []transcript.SegmentInfo
	seen     map[string]int32 // id -> place in order
	order    []verifiedEntry
	edits    editCheck
	bodies   [][][]byte             // entries of each segment read, as stored
	refs     [][]segment.PayloadRef // payload references of each segment read
	decoded  []*segment.Segment     // segments read whose key names their checksum
	vanished int                    // segments deleted since the listing
	headers  []int32                // places in order of the session headers
}

// report adds a problem found in key ("" for the session).
func (v *sessionVerifier) report(key, format string, args ...any) {
	v.c.problems = append(v.c.problems, verifyProblem{Session: v.ref.String(), Key: key, Problem: fmt.Sprintf(format, args...)})
}

// readSegment reads segment i and its entries: every entry must parse, and an
// id read before must have the same bytes. Only a cancelled ctx is an error.
func (v *sessionVerifier) readSegment(ctx context.Context, i int, info transcript.SegmentInfo) error {
	v.c.segments++
	seg, err := v.s.ReadSegment(ctx, info.Key)
	if errors.Is(err, bucket.ErrNotFound) {
		v.vanished++
		return nil // deleted since the listing (compaction): not a problem
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v.report(info.Key, "%v", err)
		return nil
	}
	sum := transcript.KeyChecksum(seg.Meta)
	// Before the entries are parsed, so that the metadata this command does not
	// use can be collected while the maps below grow.
	seg = checkedPart(seg)
	if sum != info.Hash {
		v.report(info.Key, "key names checksum %016x, segment has %016x", info.Hash, sum)
	} else {
		v.decoded[i] = seg
	}
	v.bodies[i], v.refs[i] = seg.Entries, seg.Meta.Refs
	v.notePayloads(info.Key, seg.Meta.Refs)
	// Room for every entry of the segment at once: grown by appends, order and
	// seen would each be held twice while they are copied.
	v.order = slices.Grow(v.order, len(seg.Entries))
	if len(v.seen) == 0 {
		v.seen = make(map[string]int32, len(seg.Entries))
	}
	for pos, raw := range seg.Entries {
		e, err := transcript.ParseEntry(raw)
		if err != nil {
			v.report(info.Key, "entry %d: %v", pos, err)
			continue
		}
		k, ok := v.seen[e.ID]
		if !ok {
			at := int32(len(v.order))
			v.seen[e.ID] = at
			v.order = append(v.order, verifiedEntry{id: e.ID, parentID: e.ParentID, seg: int32(i), pos: int32(pos)})
			v.edits.note(at, int32(i), raw)
			if mayBeHeader(raw) && isHeader(raw) {
				v.c.headers++
				v.headers = append(v.headers, at)
			}
			continue
		}
		prev := v.order[k]
		prevRefs := segment.EntryRefs(v.refs[prev.seg], uint32(prev.pos))
		if !transcript.SameEntry(v.bodies[prev.seg][prev.pos], prevRefs, raw, segment.EntryRefs(seg.Meta.Refs, uint32(pos))) {
			v.report(info.Key, "id conflict: entry %s (position %d) differs from the one in %s", cmdcli.Escape(e.ID), pos, v.segs[prev.seg].Key)
		}
	}
	return nil
}

// checkedPart is what the checks after the read (checkCompacted, the lost
// entries) need of a decoded segment, held until the session is checked: its
// entries and its metadata without the entry index and the origins (either
// form), which this command does not use (it parses every entry) and which
// take some 32 bytes an entry of a compacted segment as stored; the group id
// is copied out of the string the index was cut from, so that the string can
// go too. seg itself is not modified.
func checkedPart(seg *segment.Segment) *segment.Segment {
	m := seg.Meta
	m.DropIndex()
	m.Group.ID = strings.Clone(m.Group.ID)
	return &segment.Segment{Meta: m, Entries: seg.Entries}
}

// mayBeHeader reports whether raw can be a session header: one holds the word
// "session" (its type), written as is or with a \u escape. It spares verify an
// attempt of pi.ParseHeader (and its error) on each of a session's entries.
func mayBeHeader(raw []byte) bool {
	return bytes.Contains(raw, []byte("session")) || bytes.Contains(raw, []byte(`\u`))
}

// isHeader reports whether pi.ParseHeader accepts raw.
func isHeader(raw []byte) bool {
	_, err := pi.ParseHeader(raw)
	return err == nil
}

// checkHeaders reports a session of entries without a session header, which
// restore and export refuse, and one that holds more than one (one written before
// imports and appends refused a second one): one problem naming every header and
// the segment that holds it. Readers take the first in merge order.
func (v *sessionVerifier) checkHeaders() {
	if len(v.headers) == 0 && len(v.order) > 0 {
		// restore, export and a SessionTree's open start from the header: a session
		// of entries without one (its first segment lost, or never written) does
		// not restore.
		v.report("", "no session header: its %s cannot be restored or exported (was its first segment lost?)",
			cmdcli.Count(len(v.order), "entry"))
		return
	}
	if len(v.headers) < 2 {
		return
	}
	names := make([]string, len(v.headers))
	for i, at := range v.headers {
		h := v.order[at]
		names[i] = fmt.Sprintf("%s in %s", cmdcli.Escape(h.id), v.segs[h.seg].Key)
	}
	v.report("", "%d session headers: %s (a session has one; readers take the first in merge order)",
		len(v.headers), strings.Join(names, ", "))
}

// headChecks bounds how many times checkHead reads a head that keeps moving
// (a session written or compacted while it is verified) before it gives up.
const headChecks = 3

// checkHead checks a strict session's head (HEAD.json), read before the listing
// (head, or headErr): it must parse, every segment it commits must be listed,
// and its head entry must be one the segments hold. Without them the server
// serves the session short and refuses every append. A segment is deleted only
// after a head that no longer names it was written (a compaction's), so a
// committed segment missing from the listing is lost unless the head moved
// since it was read: then the head is read again, with a listing after it.
// Only a failure to read or list is an error.
func (v *sessionVerifier) checkHead(ctx context.Context, head transcript.Head, headErr error) error {
	prefix := v.s.SessionPrefix(v.ref)
	headKey := prefix + transcript.HeadName
	switch {
	case errors.Is(headErr, bucket.ErrNotFound):
		return nil // a default-mode session
	case headErr != nil:
		v.report(headKey, "the strict session's head does not parse (%v): the server can neither serve nor append to it", headErr)
		return nil
	}
	relKeys := func(segs []transcript.SegmentInfo) map[string]bool {
		m := make(map[string]bool, len(segs))
		for _, in := range segs {
			m[strings.TrimPrefix(in.Key, prefix)] = true
		}
		return m
	}
	listed := relKeys(v.segs)
	for attempt := 1; ; attempt++ {
		var missing []string
		for _, k := range head.Segments {
			if !listed[k] {
				missing = append(missing, k)
			}
		}
		if len(missing) == 0 {
			break
		}
		again, err := v.s.ReadHead(ctx, v.ref)
		if err != nil && !errors.Is(err, bucket.ErrNotFound) {
			return err
		}
		if err == nil && again.Same(head) {
			for _, k := range missing {
				v.report(headKey, "the head commits segment %s, which is missing: its entries are lost to every reader", cmdcli.Escape(k))
			}
			return nil
		}
		if err != nil || attempt == headChecks {
			return nil // deleted, or still moving: nothing to say of a head gone by
		}
		segs, err := v.s.ListSegments(ctx, v.ref)
		if err != nil {
			return err
		}
		head, listed = again, relKeys(segs)
	}
	if head.Entry != "" {
		if _, ok := v.seen[head.Entry]; !ok {
			v.report(headKey, "the head entry %s is in no segment: the server refuses every append", cmdcli.Escape(head.Entry))
		}
	}
	return nil
}

// checkCompacted reports compacted segments that lack an entry of an input they
// claim, and groups of parts that are not whole.
func (v *sessionVerifier) checkCompacted() {
	for _, u := range transcript.UnheldInputs(v.segs, v.decoded) {
		v.report(u.Superseder, "forged or damaged superseder: names %s as an input but lacks its entry %s", u.Input, u.Entry)
	}
	if v.vanished == 0 { // a part deleted since the listing is not missing
		for _, g := range transcript.IncompleteGroups(v.segs, v.decoded) {
			v.report(g.Present[0], "%v", g)
		}
	}
}

// checkTree reports the tree's problems: parents that no segment holds, context
// edits that edit nothing on their branch, and parent chains that loop.
func (v *sessionVerifier) checkTree() {
	cycles := v.cycles()
	for _, f := range v.order {
		if p := f.parentID; p != "" {
			if _, ok := v.seen[p]; !ok {
				v.report(v.segs[f.seg].Key, "dangling parent: entry %s has parentId %s, which no segment holds", cmdcli.Escape(f.id), cmdcli.Escape(p))
			}
		}
	}
	for _, p := range v.edits.problems(len(v.order), func(k int32) string { return v.order[k].parentID }, v.seen) {
		v.report(v.segs[p.seg].Key, "%s", p.text)
	}
	for _, cyc := range cycles {
		sort.Strings(cyc)
		for i, id := range cyc {
			cyc[i] = cmdcli.Escape(id)
		}
		v.report("", "cycle: entries %v form a parent loop", cyc)
	}
}

// cycles returns the ids of each parent chain that loops.
func (v *sessionVerifier) cycles() [][]string {
	const (
		unvisited = iota
		onPath
		done
	)
	order := v.order
	var cycles [][]string
	for k := range order {
		var path []int32
		cur, ok := int32(k), true
		for ok && order[cur].state == unvisited {
			order[cur].state = onPath
			path = append(path, cur)
			cur, ok = -1, false
			if p := order[path[len(path)-1]].parentID; p != "" {
				cur, ok = v.seen[p]
			}
		}
		if ok && order[cur].state == onPath {
			for i, p := range path {
				if p == cur {
					cyc := make([]string, 0, len(path)-i)
					for _, q := range path[i:] {
						cyc = append(cyc, order[q].id)
					}
					cycles = append(cycles, cyc)
					break
				}
			}
		}
		for _, p := range path {
			order[p].state = done
		}
	}
	return cycles
}
