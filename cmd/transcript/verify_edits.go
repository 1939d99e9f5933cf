package main

import (
	"bytes"
	"fmt"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
)

// editCheck collects the context_edit entries verify reads in one session and
// then checks each against the tree: its target must be an entry before it on
// its branch (an ancestor), as Pi 1.6 writes them and as the context rules
// apply them (docs/ENTRIES.md); and it must say what it does.
type editCheck struct {
	edits []editAt
}

// editAt is one context_edit entry: its place in verify's order, the segment
// verify read it from, its id and what it says.
type editAt struct {
	at, seg int32
	id      string
	edit    pi.ContextEdit
	// bad is set when the entry edits nothing (its targetId is not a string).
	bad bool
}

// editProblem is a problem editCheck found, in the segment seg.
type editProblem struct {
	seg  int32
	text string
}

var contextEditType = []byte(`"` + pi.TypeContextEdit + `"`)

// note looks at the entry first read at place at of verify's order, from
// segment seg, and keeps it when it is a context edit. Only an entry whose
// bytes name the type is parsed.
func (c *editCheck) note(at, seg int32, raw []byte) {
	if !bytes.Contains(raw, contextEditType) {
		return
	}
	e, err := pi.ParseEntry(raw)
	if err != nil || e.Type() != pi.TypeContextEdit {
		return
	}
	ed, ok := pi.ContextEditOf(e)
	c.edits = append(c.edits, editAt{at: at, seg: seg, id: e.ID(), edit: ed, bad: !ok})
}

// problems checks the edits against the tree of n entries: parentID gives the
// parentId of the entry at a place ("" for none), places the place of each id.
func (c *editCheck) problems(n int, parentID func(k int32) string, places map[string]int32) []editProblem {
	if len(c.edits) == 0 {
		return nil
	}
	parent := func(k int32) (int32, bool) {
		p, ok := places[parentID(k)]
		return p, ok
	}
	in, out := eulerTour(n, parent)
	var ps []editProblem
	add := func(ed editAt, format string, args ...any) {
		ps = append(ps, editProblem{ed.seg, fmt.Sprintf("context edit %s ", cmdcli.Escape(ed.id)) + fmt.Sprintf(format, args...)})
	}
	for _, ed := range c.edits {
		if ed.bad {
			add(ed, "has no string targetId: it edits nothing")
			continue
		}
		target := cmdcli.Escape(ed.edit.Target)
		t, ok := places[ed.edit.Target]
		switch {
		case !ok:
			add(ed, "edits %s, which no segment holds", target)
		case in[ed.at] < 0:
			// In a parent cycle, which verify reports: on no branch at all.
		case in[t] < 0 || in[t] >= in[ed.at] || out[ed.at] > out[t]:
			add(ed, "edits %s, which is not on its branch (not an entry before it on its path): the edit changes no context", target)
		}
		if ed.edit.Replacement == nil {
			add(ed, "has no replacement (Pi 1.6 fails on it; the store leaves %s as it is)", target)
		}
	}
	return ps
}

// eulerTour numbers the n entries of a tree (parent gives an entry's parent) in
// a depth-first walk from its roots: entry a is an ancestor of entry b when
// in[a] < in[b] and out[b] <= out[a]. Entries in a parent cycle, which no root
// reaches, get in = -1.
func eulerTour(n int, parent func(k int32) (int32, bool)) (in, out []int32) {
	// The children of each entry, as one array cut by start.
	start := make([]int32, n+1)
	for k := range int32(n) {
		if p, ok := parent(k); ok && p != k {
			start[p+1]++
		}
	}
	for i := range n {
		start[i+1] += start[i]
	}
	children := make([]int32, start[n])
	fill := append([]int32(nil), start[:n]...)
	for k := range int32(n) {
		if p, ok := parent(k); ok && p != k {
			children[fill[p]] = k
			fill[p]++
		}
	}
	in, out = make([]int32, n), make([]int32, n)
	for i := range in {
		in[i] = -1
	}
	clock := int32(0)
	var stack []int32 // an entry, or ^entry once its children are done
	for k := range int32(n) {
		if p, ok := parent(k); ok && p != k {
			continue
		}
		stack = append(stack, k)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v < 0 {
				out[^v] = clock
				continue
			}
			in[v] = clock
			clock++
			stack = append(stack, ^v)
			stack = append(stack, children[start[v]:start[v+1]]...)
		}
	}
	return in, out
}
