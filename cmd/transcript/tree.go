package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const treeUsage = `
Usage: transcript tree [flags]

Draws the tree of the session --agent/--session of --ns, union-merged from the
store (a strict session: the segments its head commits), like 'git log --graph'
from the root down: one line per entry with its short
id, type, a short content, the writer (replica) that stored it (found in the level-0
segments still stored; once compaction has deleted them, the compactor with the
level), and its label.
Branch points (where replicas diverged) open a new column and say which writers
continued; compactions are marked; a context edit names the entry it edits or
removes from the context, and that entry names the edits; the active leaf is
drawn as @ instead of *.
A wide fan (more than 8 branches, or more columns than 16 in all) is drawn
collapsed: its branches follow one another in one column, each introduced by a
": branch K of N from ID" line, so the output grows with the number of entries.

Examples:
  transcript tree --agent coder --session s1
  transcript tree --store 's3://transcripts?endpoint=127.0.0.1:9000&insecure=true' --agent coder --session s1
`

// treeNode is one entry as tree draws it.
type treeNode struct {
	entry    pi.Entry
	writer   string
	children []int
}

func runTree(ctx context.Context, env *cliEnv, args []string) error {
	fs, sf := newStoreFlagSet(env, "tree", treeUsage, false)
	width := fs.Int("width", 72, "longest content shown per entry, in characters")
	if err := parse(fs, sf, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	ref, err := sf.ref("tree")
	if err != nil {
		return err
	}
	s, err := sf.openStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	s = s.Stored() // no payload is fetched: large texts show as such
	r := newSessionReader(s, ref)
	res, err := r.ReadLean(ctx, ref) // a strict session as its head commits it
	if errors.Is(err, bucket.ErrNotFound) {
		return errSessionNotFound(ref)
	}
	if err != nil {
		return err
	}
	origin, err := entryWriters(ctx, s, ref, res, r.committedL0)
	if err != nil {
		return err
	}
	var nodes []treeNode
	for i := range res.Len() {
		e := res.Entry(i)
		writer, ok := origin[e.ID]
		if !ok {
			writer = "?"
			if info, err := transcript.ParseKey(s.Prefix(), e.Segment); err == nil {
				writer = fmt.Sprintf("%s L%d", info.WriterID, info.Level) // a compactor, not a replica
			}
		}
		if h, err := pi.ParseHeader(e.Raw); err == nil {
			fmt.Fprintf(env.stdout, "session %s (version %d, %s, cwd %q) [%s]\n", cmdcli.Escape(h.ID()), h.Version(), cmdcli.Escape(h.Timestamp()), h.Cwd(), writer)
			continue
		}
		pe, err := pi.ParseEntry(e.Raw)
		if err != nil {
			fmt.Fprintf(env.stderr, "skipped entry %s: %s\n", cmdcli.Escape(e.ID), cmdcli.Escape(err.Error()))
			continue
		}
		nodes = append(nodes, treeNode{entry: pe, writer: writer})
	}
	drawTree(env.stdout, nodes, *width)
	for _, c := range res.Conflicts {
		fmt.Fprintf(env.stdout, "conflict: entry %s has other contents in %s (not shown)\n", cmdcli.Escape(c.ID), c.DroppedSegment)
	}
	lostEntries(env, "tree", ref, res)
	return nil
}

// entryWriters maps each entry id to the writer of the first level-0 segment that
// holds it. Entries the merge took from a compacted segment are looked up in the
// level-0 inputs that are still stored (compaction deletes them only after a delay);
// entries whose inputs are gone are missing from the map. committed, when it
// gives a set, narrows the lookup to the level-0 segments it holds (a strict
// session's committed ones: one no head commits holds no entry of the session,
// though it may hold an id of one).
func entryWriters(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, res *transcript.LeanResult,
	committed func(ctx context.Context) (map[string]bool, error)) (map[string]string, error) {
	out := map[string]string{}
	compacted := false
	for i := range res.Len() {
		e := res.Entry(i)
		info, err := transcript.ParseKey(s.Prefix(), e.Segment)
		if err == nil && info.Level == 0 {
			out[e.ID] = info.WriterID
		} else {
			compacted = true
		}
	}
	if !compacted {
		return out, nil
	}
	keep, err := committed(ctx)
	if err != nil {
		return nil, err
	}
	segs, err := s.ListSegments(ctx, ref)
	if err != nil {
		return nil, err
	}
	for _, info := range segs {
		if info.Level != 0 || keep != nil && !keep[info.Key] {
			continue
		}
		seg, err := s.ReadSegment(ctx, info.Key)
		if err != nil {
			continue // deleted since the listing, or corrupt (verify reports that)
		}
		for _, raw := range seg.Entries {
			if e, err := transcript.ParseEntry(raw); err == nil {
				if _, ok := out[e.ID]; !ok {
					out[e.ID] = info.WriterID
				}
			}
		}
	}
	return out, nil
}

// maxInputDepth bounds how many levels of compacted segments committedL0
// follows down to level 0 (as many as a session of millions of turns has).
const maxInputDepth = 8

// committedL0 returns the keys of the level-0 segments a strict session's head
// commits, after a read: those it names, and the inputs of the compacted ones
// it names as their metadata frames name them (ranged GETs), down to level 0;
// a compacted input that is gone is gone with its own inputs. It returns nil
// for a default-mode session, every level-0 segment of which is its.
func (r *sessionReader) committedL0(ctx context.Context) (map[string]bool, error) {
	if !r.strict || r.head == nil {
		return nil, nil
	}
	prefix := r.s.SessionPrefix(r.ref)
	keep := map[string]bool{}
	var walk func(rel string, depth int) error
	walk = func(rel string, depth int) error {
		key := prefix + rel
		info, err := transcript.ParseKey(r.s.Prefix(), key)
		switch {
		case err != nil:
			return nil // verify names it
		case info.Level == 0:
			keep[key] = true
			return nil
		case depth == maxInputDepth:
			return nil
		}
		m, err := r.s.ReadSegmentMeta(ctx, key)
		if errors.Is(err, bucket.ErrNotFound) || errors.Is(err, segment.ErrCorrupt) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, in := range m.Inputs {
			if err := walk(relKey(in), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, rel := range r.head.Segments {
		if err := walk(rel, 0); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// relKey returns a segment key relative to its session: its last two
// elements ("L0/{name}.jsonl.zst"), however the key was prefixed.
func relKey(key string) string {
	i := strings.LastIndexByte(key, '/')
	if i <= 0 {
		return key
	}
	return key[strings.LastIndexByte(key[:i], '/')+1:]
}

// shortID returns the first 8 bytes of an id, escaped for the terminal.
func shortID(id string) string {
	if len(id) > 8 {
		id = id[:8]
	}
	return cmdcli.Escape(id)
}

// describe returns an entry's type and a one-line summary of its content.
func describe(e pi.Entry, width int) string {
	str := func(name string) string { v, _ := e.StringField(name); return v }
	var what string
	switch e.Type() {
	case pi.TypeMessage:
		what = e.Role() + ": " + messageText(e.Message())
	case pi.TypeModelChange:
		what = str("provider") + "/" + str("modelId")
	case pi.TypeThinkingLevelChange:
		what = str("thinkingLevel")
	case pi.TypeCompaction:
		tokens, _ := e.Field("tokensBefore")
		system := ""
		if pi.RecordedSystemMessage(e) != nil {
			system = ", + system message"
		}
		what = fmt.Sprintf("COMPACTION (tokensBefore %s, keeps from %s%s): %s", tokens, shortID(str("firstKeptEntryId")), system, str("summary"))
	case pi.TypeBranchSummary:
		what = str("summary")
	case pi.TypeCustom:
		what = str("customType")
	case pi.TypeCustomMessage:
		content, _ := e.Field("content")
		what = str("customType") + ": " + contentText(content)
	case pi.TypeLabel:
		what = shortID(str("targetId")) + " = " + strconvQuote(str("label"))
	case pi.TypeSessionInfo:
		what = str("name")
	case pi.TypeLeaf:
		what = "-> " + shortID(str("targetId"))
	case pi.TypeContextEdit:
		what = describeEdit(e)
	case pi.TypeUsage:
		what = describeUsage(e)
	}
	return e.Type() + " " + truncate(what, width)
}

// messageText is the text of an agent message: its content, or the tool it calls or
// answers.
func messageText(raw json.RawMessage) string {
	var m struct {
		Content  json.RawMessage `json:"content"`
		ToolName string          `json:"toolName"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	text := contentText(m.Content)
	if m.ToolName != "" {
		text = m.ToolName + ": " + text
	}
	return text
}

// contentText flattens message content (a string or content blocks) to one line.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
		Name     string `json:"name"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		switch {
		case strings.HasPrefix(b.Text, segment.RefPrefix) && len(b.Text) == segment.RefLen:
			parts = append(parts, "[large text kept as a payload]") // tree reads entries as stored
		case b.Text != "":
			parts = append(parts, b.Text)
		case b.Type == "toolCall":
			parts = append(parts, "toolCall "+b.Name)
		case b.Type != "" && b.Type != "thinking":
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, " ")
}

// truncate makes s one line of at most n characters.
func truncate(s string, n int) string {
	s = cmdcli.Escape(strings.Join(strings.Fields(s), " "))
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}

// strconvQuote quotes a label, or says that it was cleared.
func strconvQuote(s string) string {
	if s == "" {
		return "(cleared)"
	}
	return fmt.Sprintf("%q", s)
}
