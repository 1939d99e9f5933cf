package sessiontree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// rewriteLocalFiles rewrites the local files after a pull replaced the version
// of entries they hold (Tree.replaced): the log keeps every line it has, the
// first line of each replaced id holding the new version, and gets the entries
// not yet in it; then the context file is rewritten to hold what it must
// (contextKeep, or every entry the log holds for a path without a compaction).
// Each file is replaced atomically, the log first. After a crash between the
// two, the context file (which Load reads) still holds the old versions, and so
// does the segments file, written only after both (saveStoredSet): the next
// pull replaces them again. t.mu is held.
func (t *Tree) rewriteLocalFiles() error {
	if err := saveTornBefore(t.files.Log, t.cfg.NoSync); err != nil {
		return fmt.Errorf("flush %s: %w", t.ref, err)
	}
	data, err := os.ReadFile(t.files.Log)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("flush %s: read log: %w", t.ref, err)
	}
	var buf bytes.Buffer
	if len(data) == 0 {
		buf.Write(t.header.Raw())
		buf.WriteByte('\n')
	}
	seen := map[string]bool{}
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if e, err := ParseEntry(line); err == nil && t.replaced[e.ID()] && !seen[e.ID()] {
			seen[e.ID()] = true
			line = t.entries[t.byID[e.ID()]].Raw()
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	for _, i := range t.pendingLocal {
		buf.Write(t.entries[i].Raw())
		buf.WriteByte('\n')
	}
	if err := writeAtomic(t.files.Log, buf.Bytes(), t.cfg.NoSync); err != nil {
		return fmt.Errorf("flush %s: rewrite log: %w", t.ref, err)
	}
	t.headerInLog, t.pendingLocal, t.replaced = true, nil, nil
	for i := range t.flags {
		t.flags[i] |= inLog
	}
	keep, ok := t.contextKeep()
	if !ok {
		keep = t.logKeep()
	}
	return t.rewriteContext(keep)
}
