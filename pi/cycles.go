package pi

// Parent cycles, as Pi meets them.
//
// The store accepts entries whose parentIds form a cycle (a→b→a, stored in two
// segments, each valid alone; or an entry naming itself): the merge breaks the
// cycle for its order, and this package's walks stop at it. Pi does not: it
// follows parentId until it finds no entry, so a walk that reaches a cycle never
// ends. Measured with Pi 0.58 and Pi 1.6 (cmd/transcript's oracle packages):
// opening a file and building its context (what /resume, --continue and
// --session do) spins forever at 100% CPU in Pi 0.58 (ignoring SIGTERM) and
// aborts Pi 1.6 with V8's "Fatal JavaScript invalid size error" when the file's
// leaf (its last entry line) is on a cycle or descends from one, a self-parent
// included; a cycle elsewhere in the file opens, but /fork lists every user
// message of the file and forking from one on or below a cycle walks it, and
// /tree shows a self-parent (as a root) and its descendants, and moving there
// walks it. A parentId that names no entry of the file ends Pi's walk (that
// entry is the root of its path, and /tree shows it as a root).
//
// A file written for Pi therefore leaves out the entries that lie on a parent
// cycle (OnParentCycle): their descendants stay, each child of a cycle entry
// then naming a parent the file lacks, which Pi takes as a root.

// OnParentCycle reports which of n entries lie on a parent cycle as Pi follows
// parentId: parent(i) is the position of the entry that entry i's parentId
// names, false for none (a null, absent or empty parentId, or one naming no
// entry of the file). Unlike the tree rules of this package, Pi's walk takes
// every entry of the file as a parent, a "leaf" entry too, and an entry naming
// itself as its own parent (a cycle of one). It returns nil when no entry lies
// on a cycle; entries that only descend from one are not on it. It takes O(n).
func OnParentCycle(n int, parent func(i int) (int, bool)) []bool {
	const (
		unseen uint8 = iota
		walking
		done
	)
	state := make([]uint8, n)
	var on []bool
	var walk []int
	for start := range n {
		if state[start] != unseen {
			continue
		}
		walk = walk[:0]
		cur, ok := start, true
		for ok && state[cur] == unseen {
			state[cur] = walking
			walk = append(walk, cur)
			cur, ok = parent(cur)
		}
		if ok && state[cur] == walking {
			// The walk came back to one of its own entries: from there on
			// it went round a cycle.
			if on == nil {
				on = make([]bool, n)
			}
			for k := len(walk) - 1; k >= 0; k-- {
				on[walk[k]] = true
				if walk[k] == cur {
					break
				}
			}
		}
		for _, i := range walk {
			state[i] = done
		}
	}
	return on
}

// OnParentCycleOf is OnParentCycle of entries in file order, each parentId
// looked up as Pi does (the last of duplicate ids counts, as in Pi's index).
func OnParentCycleOf(entries []Entry) []bool {
	idx := make(map[string]int, len(entries))
	for i, e := range entries {
		idx[e.id] = i
	}
	return OnParentCycle(len(entries), func(i int) (int, bool) {
		e := entries[i]
		if !e.hasPar || e.parentID == "" {
			return 0, false
		}
		p, ok := idx[e.parentID]
		return p, ok
	})
}
