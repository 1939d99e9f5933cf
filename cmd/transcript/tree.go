package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

const treeUsage = `
Usage: transcript tree [flags]

Draws the tree of the session --agent/--session of --ns, union-merged from the
store, like 'git log --graph' from the root down: one line per entry with its short
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
	res, err := s.ReadAll(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return errSessionNotFound(ref)
	}
	if err != nil {
		return err
	}
	origin, err := entryWriters(ctx, s, ref, res)
	if err != nil {
		return err
	}
	var nodes []treeNode
	for _, e := range res.Entries {
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
	return nil
}

// entryWriters maps each entry id to the writer of the first level-0 segment that
// holds it. Entries the merge took from a compacted segment are looked up in the
// level-0 inputs that are still stored (compaction deletes them only after a delay);
// entries whose inputs are gone are missing from the map.
func entryWriters(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, res *transcript.MergeResult) (map[string]string, error) {
	out := map[string]string{}
	compacted := false
	for _, e := range res.Entries {
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
	segs, err := s.ListSegments(ctx, ref)
	if err != nil {
		return nil, err
	}
	for _, info := range segs {
		if info.Level != 0 {
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

// drawTree prints nodes (in merge order) as a graph, depth first, each branch in
// its own column.
func drawTree(w io.Writer, nodes []treeNode, width int) {
	d := newTreeDrawer(w, nodes, width)
	for i := len(d.roots) - 1; i >= 0; i-- {
		d.stack = append(d.stack, drawItem{d.roots[i], -1, ""})
	}
	for len(d.stack) > 0 {
		it := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		d.draw(it)
	}
	for i, v := range d.visited {
		if !v {
			fmt.Fprintf(w, "! %s %s [%s]  (in a parent cycle: unreachable from any root)\n",
				shortID(nodes[i].entry.ID()), describe(nodes[i].entry, width), nodes[i].writer)
		}
	}
}

// drawItem is a node waiting to be drawn in column col (-1: a new one); fan,
// when set, is the line that introduces a branch of a collapsed fan.
type drawItem struct {
	node, col int
	fan       string
}

// treeDrawer is the state of one drawTree.
type treeDrawer struct {
	w       io.Writer
	nodes   []treeNode
	width   int
	roots   []int
	active  int // the node of the active leaf, -1 for none
	labels  map[string]string
	edits   map[string][]string
	lanes   []bool // the columns, open or not
	stack   []drawItem
	visited []bool
}

// newTreeDrawer links nodes to their children and finds the roots, the labels,
// the notes of context edits and the active leaf (pi's rules).
func newTreeDrawer(w io.Writer, nodes []treeNode, width int) *treeDrawer {
	index := make(map[string]int, len(nodes))
	entries := make([]pi.Entry, len(nodes))
	for i, n := range nodes {
		index[n.entry.ID()] = i
		entries[i] = n.entry
	}
	d := &treeDrawer{w: w, nodes: nodes, width: width, labels: pi.Labels(entries), edits: editNotes(entries),
		visited: make([]bool, len(nodes))}
	for i, n := range nodes {
		if p, ok := n.entry.ParentID(); ok {
			if pj, found := index[p]; found && pj != i {
				nodes[pj].children = append(nodes[pj].children, i)
				continue
			}
		}
		d.roots = append(d.roots, i)
	}
	active, ok := pi.ActiveLeaf(entries, pi.NewIndex(entries))
	if !ok {
		active = -1
	}
	d.active = active
	return d
}

// alloc opens the first closed column (or a new one) and returns it.
func (d *treeDrawer) alloc() int {
	for c, open := range d.lanes {
		if !open {
			d.lanes[c] = true
			return c
		}
	}
	d.lanes = append(d.lanes, true)
	return len(d.lanes) - 1
}

// graph returns the columns of one line: mark in column col, "|" in the other
// open ones.
func (d *treeDrawer) graph(col int, mark string) string {
	var b strings.Builder
	for c, open := range d.lanes {
		switch {
		case c == col:
			b.WriteString(mark)
		case open:
			b.WriteString("|")
		default:
			b.WriteString(" ")
		}
		b.WriteString(" ")
	}
	return b.String()
}

// draw prints the line of one node and queues its children.
func (d *treeDrawer) draw(it drawItem) {
	if it.col < 0 {
		it.col = d.alloc()
	}
	n := d.nodes[it.node]
	if it.fan != "" {
		d.lanes[it.col] = true // the branch before it in this column closed it
		fmt.Fprintln(d.w, strings.TrimRight(d.graph(it.col, ":")+it.fan, " "))
	}
	d.visited[it.node] = true
	mark := "*"
	if it.node == d.active {
		mark = "@"
	}
	collapse := len(n.children) > maxFan || len(n.children) > 1 && openLanes(d.lanes)+len(n.children)-1 > maxColumns
	line := fmt.Sprintf("%s%s %s [%s]", d.graph(it.col, mark), shortID(n.entry.ID()), describe(n.entry, d.width), n.writer)
	if notes := d.notes(it.node, collapse); len(notes) > 0 {
		line += "  (" + strings.Join(notes, "; ") + ")"
	}
	fmt.Fprintln(d.w, strings.TrimRight(line, " "))
	if len(n.children) == 0 {
		d.lanes[it.col] = false
		return
	}
	if collapse {
		// A wide fan: its branches follow one another in this column, each
		// introduced by one line, so that every line stays as narrow as the
		// columns open above it and the output grows with the entries.
		for k := len(n.children) - 1; k >= 0; k-- {
			fan := fmt.Sprintf("branch %d of %d from %s", k+1, len(n.children), shortID(n.entry.ID()))
			d.stack = append(d.stack, drawItem{n.children[k], it.col, fan})
		}
		return
	}
	d.branch(it.col, n.children)
}

// notes returns what the line of node i says after the entry: its label, the
// context edits of it, whether it is the active leaf, and its branches.
func (d *treeDrawer) notes(i int, collapse bool) []string {
	n := d.nodes[i]
	var notes []string
	if l, ok := d.labels[n.entry.ID()]; ok {
		notes = append(notes, "label: "+cmdcli.Escape(l))
	}
	notes = append(notes, d.edits[n.entry.ID()]...)
	if i == d.active {
		notes = append(notes, "ACTIVE LEAF")
	}
	if len(n.children) > 1 {
		var ws []string
		for _, c := range n.children {
			ws = append(ws, d.nodes[c].writer)
		}
		if collapse {
			ws = countWriters(ws)
		}
		notes = append(notes, fmt.Sprintf("branch point: %d branches, by %s", len(n.children), strings.Join(ws, ", ")))
	}
	return notes
}

// branch queues children of a node in column col, the first in that column
// and each other in a column of its own, and prints the line that forks them.
func (d *treeDrawer) branch(col int, children []int) {
	cols := []int{col}
	for range children[1:] {
		cols = append(cols, d.alloc())
	}
	if len(cols) > 1 {
		conn := []byte(d.graph(col, "|"))
		for _, c := range cols[1:] {
			if c > col {
				conn[2*c] = '\\'
			} else {
				conn[2*c] = '/'
			}
		}
		fmt.Fprintln(d.w, strings.TrimRight(string(conn), " "))
	}
	for k := len(children) - 1; k >= 0; k-- {
		d.stack = append(d.stack, drawItem{children[k], cols[k], ""})
	}
}

// Wide fans are drawn collapsed (see drawTree): a branch point with more than
// maxFan children, or one whose children would open more than maxColumns
// columns in all, draws its branches one after another in its own column.
const (
	maxFan     = 8
	maxColumns = 16
)

// openLanes counts the open columns.
func openLanes(lanes []bool) int {
	n := 0
	for _, open := range lanes {
		if open {
			n++
		}
	}
	return n
}

// countWriters names each writer of ws once, in order of first appearance, with
// the number of branches it wrote when more than one ("w ×3").
func countWriters(ws []string) []string {
	count := map[string]int{}
	var order []string
	for _, w := range ws {
		if count[w] == 0 {
			order = append(order, w)
		}
		count[w]++
	}
	for i, w := range order {
		if count[w] > 1 {
			order[i] = fmt.Sprintf("%s ×%d", w, count[w])
		}
	}
	return order
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
