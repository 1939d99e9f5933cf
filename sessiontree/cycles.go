package sessiontree

import "github.com/transcriptstore/transcript/pi"

// Parent cycles and the context file.
//
// The store accepts entries whose parentIds form a cycle (a→b in one segment,
// b→a in another: each is valid alone), so a pull, a restore or an import can
// bring one into a tree. The tree keeps them: the log holds every entry the
// tree persisted (it is the tree's own record, which MergeLog reads back), and
// the tree's rules stop a walk at a cycle. The context file is Pi's session
// file, which a runtime may hand to Pi, and Pi cannot open a file whose leaf is
// on or below a cycle, nor /fork from an entry there (see pi/cycles.go): the
// context file never holds an entry that lies on a parent cycle of the tree's
// entries (pi.OnParentCycle). Their descendants stay in it, as roots to Pi. An
// entry already in the file that a later entry closes a cycle through makes
// the next flush rewrite the file without it.

// cycleState tracks which of the tree's entries lie on a parent cycle, checking
// the whole tree only when an entry arrives that could close one: one that
// names itself, or one an entry the tree held named as its parent before it
// arrived (every cycle that forms holds such an entry). A tree whose entries
// all arrive parents first, as Pi and a merge order write them, is never
// checked whole.
type cycleState struct {
	// missing holds the parentIds of the tree's entries that named no entry of
	// the tree when they were added (nil: none).
	missing map[string]bool
	// stale: an entry that could close a cycle arrived, or the entries changed
	// other than by add, since on was computed.
	stale bool
	// on marks, by index, the entries on a parent cycle; nil for none.
	on []bool
}

// noteAdd records entry e, about to be added to the tree. t.mu is held.
func (t *Tree) noteAdd(e Entry) {
	c := &t.cyc
	if c.missing[e.ID()] {
		delete(c.missing, e.ID())
		c.stale = true
	}
	p, ok := e.ParentID()
	switch {
	case !ok || p == "":
	case p == e.ID():
		c.stale = true
	default:
		if _, held := t.byID[p]; !held {
			if c.missing == nil {
				c.missing = map[string]bool{}
			}
			c.missing[p] = true
		}
	}
}

// entriesChanged records that the entries changed other than by add (a merge
// of the log reorders them, a pull replaces a version). t.mu is held.
func (t *Tree) entriesChanged() { t.cyc.stale = true }

// refreshCycles brings t.cyc.on up to date with the tree's entries: a check of
// the whole tree when one is due, else the new entries are off every cycle.
// t.mu is held.
func (t *Tree) refreshCycles() {
	c := &t.cyc
	if !c.stale {
		if c.on != nil && len(c.on) < len(t.entries) {
			c.on = append(c.on, make([]bool, len(t.entries)-len(c.on))...)
		}
		return
	}
	c.on = pi.OnParentCycleOf(t.entries)
	c.missing = nil
	for _, e := range t.entries {
		if p, ok := e.ParentID(); ok && p != "" && p != e.ID() {
			if _, held := t.byID[p]; !held {
				if c.missing == nil {
					c.missing = map[string]bool{}
				}
				c.missing[p] = true
			}
		}
	}
	c.stale = false
}

// onCycle reports whether entry i lies on a parent cycle (as of the last
// refreshCycles). t.mu is held.
func (t *Tree) onCycle(i int) bool { return t.cyc.on != nil && i < len(t.cyc.on) && t.cyc.on[i] }

// ctxHoldsCycle reports whether the context file holds an entry on a parent
// cycle. t.mu is held.
func (t *Tree) ctxHoldsCycle() bool {
	for i, on := range t.cyc.on {
		if on && t.flags[i]&inCtx != 0 {
			return true
		}
	}
	return false
}
