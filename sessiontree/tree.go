package sessiontree

import (
	"crypto/rand"
	"fmt"
	"io"
	"sync"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Per-entry persistence flags.
const (
	inLog    uint8 = 1 << iota // written to the log file
	inCtx                      // written to the context file
	uploaded                   // handed to the uploader, or came from the log or the store
)

// Tree is one session: its header, its entries in order, the active leaf, and the
// state of its local files and of its uploads. Create one with New, Open, Load,
// Import or Restore. A Tree is safe for concurrent use.
type Tree struct {
	cfg   Config
	ref   transcript.TranscriptRef
	files Files

	ioMu sync.Mutex // serialises Flush, MergeLog and Pull
	mu   sync.Mutex // guards everything below

	header  Header
	entries []Entry
	byID    map[string]int
	flags   []uint8
	leaf    int // index of the active leaf, -1 for none (null)

	pendingLocal   []int // entries not yet in the log
	pendingUpload  []int // locally created entries not yet uploaded
	ctxPending     []int // entries in the log but not yet in the context file
	headerInLog    bool
	headerInCtx    bool
	headerUploaded bool
	// unsentOnDisk: the unsent file (Files.Unsent) may exist; the flush that
	// hands over everything it names removes it (unsentfile.go).
	unsentOnDisk bool
	rewriteCtx   bool // a compaction was appended since the last flush
	// replaced: the ids of entries whose version a pull replaced while the local
	// files hold the old one (a conflict the stored version wins); the next flush
	// rewrites both files (rewriteLocalFiles).
	replaced map[string]bool
	// leafJumped: since the last flush the active leaf moved other than onto a
	// child of the leaf (Branch, a "leaf" entry, a pull), so its path may run
	// through entries a compaction's rewrite left out of the context file.
	leafJumped bool
	// ctxPartial: the context file lacks entries the log holds (a compaction's
	// rewrite left them out). Until then no path can leave the file, and a leaf
	// move costs no check.
	ctxPartial bool
	stored     storeState
	// cyc: which entries lie on a parent cycle, which the context file leaves
	// out (cycles.go).
	cyc cycleState
}

func newTree(cfg Config, who Identity, agentID, sessionID string) (*Tree, error) {
	ref, err := who.Ref(agentID, sessionID)
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	if cfg.Root == "" {
		return nil, fmt.Errorf("open session %s: empty Config.Root", ref)
	}
	return &Tree{
		cfg:   cfg,
		ref:   ref,
		files: FilesOf(cfg.Root, ref),
		byID:  make(map[string]int),
		leaf:  -1,
	}, nil
}

// New starts a new, empty session in memory. Nothing is written until the first
// Flush. The header id defaults to sessionID.
func New(cfg Config, who Identity, agentID, sessionID string, h HeaderOptions) (*Tree, error) {
	t, err := newTree(cfg, who, agentID, sessionID)
	if err != nil {
		return nil, err
	}
	id := h.ID
	if id == "" {
		id = sessionID
	}
	t.header = pi.NewHeader(id, cfg.now(), h.Cwd, h.ParentSession)
	return t, nil
}

// Ref returns the session's reference (its namespace comes from the Identity).
func (t *Tree) Ref() transcript.TranscriptRef { return t.ref }

// ContextPath returns the path of the context file.
func (t *Tree) ContextPath() string { return t.files.Context }

// LogPath returns the path of the log file.
func (t *Tree) LogPath() string { return t.files.Log }

// Header returns the session header.
func (t *Tree) Header() Header {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.header
}

// add appends e to the tree (caller holds mu and has checked the id is new).
func (t *Tree) add(e Entry, flags uint8) int {
	t.noteAdd(e)
	i := len(t.entries)
	t.entries = append(t.entries, e)
	t.flags = append(t.flags, flags)
	t.byID[e.ID()] = i
	return i
}

// advance moves the active leaf as appending entry i does (pi.LeafMoveOf).
func (t *Tree) advance(i int) {
	move, target := t.leafMove(t.entries[i])
	t.setLeaf(move, target, i)
}

// leafMove is pi.LeafMoveOf of e, its "leaf" target resolved among the tree's
// entries.
func (t *Tree) leafMove(e Entry) (pi.LeafMove, string) {
	return pi.LeafMoveOf(e, func(id string) bool {
		j, ok := t.byID[id]
		return ok && t.entries[j].Type() != pi.TypeLeaf
	})
}

// setLeaf applies move, made by the entry with index i (target for
// MoveToTarget), to the active leaf.
func (t *Tree) setLeaf(move pi.LeafMove, target string, i int) {
	switch move {
	case pi.MoveTo:
		if p, ok := t.entries[i].ParentID(); ok && t.leaf >= 0 && p == t.entries[t.leaf].ID() {
			t.leaf = i // onto a child of the leaf: the path only grows
		} else {
			t.jumpLeaf(i)
		}
	case pi.MoveToTarget:
		t.jumpLeaf(t.byID[target])
	case pi.MoveToNull:
		t.jumpLeaf(-1)
	}
}

// jumpLeaf makes entry i (-1: none) the active leaf by a move other than onto
// a child of the leaf (see Tree.leafJumped).
func (t *Tree) jumpLeaf(i int) { t.leaf, t.leafJumped = i, true }

// recomputeLeaf sets the active leaf from the entry order (after a load or merge).
func (t *Tree) recomputeLeaf() {
	if i, ok := pi.ActiveLeaf(t.entries, t.byID); ok {
		t.jumpLeaf(i)
	} else {
		t.jumpLeaf(-1)
	}
}

func (t *Tree) newID() (string, error) {
	src := t.cfg.Rand
	if src == nil {
		src = rand.Reader
	}
	return pi.NewID(src, func(id string) bool { _, dup := t.byID[id]; return dup })
}

// Len returns the number of entries (the header is not an entry).
func (t *Tree) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Entries returns all entries in order (a snapshot).
func (t *Tree) Entries() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Entry(nil), t.entries...)
}

// Messages returns the message entries in order.
func (t *Tree) Messages() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Entry
	for _, e := range t.entries {
		if e.Type() == pi.TypeMessage {
			out = append(out, e)
		}
	}
	return out
}

// Entry returns the entry with id, or an error wrapping bucket.ErrNotFound.
func (t *Tree) Entry(id string) (Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.byID[id]
	if !ok {
		return Entry{}, fmt.Errorf("entry %q: %w", id, bucket.ErrNotFound)
	}
	return t.entries[i], nil
}

// Leaf returns the id of the active leaf, or "" and false when the leaf is null
// (no entries, or a leaf entry with a null target).
func (t *Tree) Leaf() (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.leaf < 0 {
		return "", false
	}
	return t.entries[t.leaf].ID(), true
}

// Branch moves the active leaf to the entry id without writing anything (as Pi's
// branch does); the next entry appended becomes its child. Use AppendLeaf to
// record the move.
func (t *Tree) Branch(id string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.byID[id]
	if !ok || t.entries[i].Type() == pi.TypeLeaf {
		return fmt.Errorf("branch to %q: %w", id, bucket.ErrNotFound)
	}
	t.jumpLeaf(i)
	return nil
}

// Labels returns the label of each labelled entry (pi.Labels).
func (t *Tree) Labels() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return pi.Labels(t.entries)
}

// Label returns the label of entry id, if any.
func (t *Tree) Label(id string) (string, bool) {
	l, ok := t.Labels()[id]
	return l, ok
}

// SessionName returns the session's name (pi.SessionName).
func (t *Tree) SessionName() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return pi.SessionName(t.entries)
}

// Children returns the entries whose parentId is id, in order (pi.Children). An
// unknown id returns an error wrapping bucket.ErrNotFound.
func (t *Tree) Children(id string) ([]Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byID[id]; !ok {
		return nil, fmt.Errorf("children of %q: %w", id, bucket.ErrNotFound)
	}
	return pi.Children(t.entries, id), nil
}

// PathToRoot returns the path from the root to entry id (root first, id last),
// following parentId, stopping at a missing parent or a cycle (pi.PathToRoot).
func (t *Tree) PathToRoot(id string) ([]Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.byID[id]
	if !ok {
		return nil, fmt.Errorf("path to %q: %w", id, bucket.ErrNotFound)
	}
	path := pi.PathTo(t.entries, t.byID, i)
	out := make([]Entry, len(path))
	for k, j := range path {
		out[k] = t.entries[j]
	}
	return out, nil
}

// BranchPoints returns the entries with more than one child, in order
// (pi.BranchPoints).
func (t *Tree) BranchPoints() []Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return pi.BranchPoints(t.entries)
}

// BuildContext returns the context at the active leaf.
func (t *Tree) BuildContext() Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.leaf < 0 {
		return pi.EmptyContext()
	}
	return pi.BuildContext(t.entries, t.byID, t.leaf)
}

// BuildContextAt returns the context at entry leafID; an unknown id (or a "leaf"
// entry's id) means the active leaf, as in Pi. For Pi's null leaf use
// BuildContextFrom(t.Entries(), &"").
func (t *Tree) BuildContextAt(leafID string) Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.byID[leafID]; ok && t.entries[i].Type() != pi.TypeLeaf {
		return pi.BuildContext(t.entries, t.byID, i)
	}
	if t.leaf < 0 {
		return pi.EmptyContext()
	}
	return pi.BuildContext(t.entries, t.byID, t.leaf)
}

// Export writes the session as a Pi version 3 file: the header line, then every
// entry in order, each followed by "\n".
func (t *Tree) Export(w io.Writer) error {
	t.mu.Lock()
	h, es := t.header, append([]Entry(nil), t.entries...)
	t.mu.Unlock()
	return WriteSession(w, h, es)
}

// Pending returns how many entries wait to be written locally and to be uploaded.
func (t *Tree) Pending() (local, upload int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pendingLocal) + len(t.ctxPending), len(t.pendingUpload)
}
