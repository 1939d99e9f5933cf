package main

import (
	"fmt"
	"io"
	"strings"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
)

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
