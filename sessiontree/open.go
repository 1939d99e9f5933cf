package sessiontree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Load opens an existing session from its context file. A torn last line is
// dropped and reported (and saved to {file}.torn, then truncated away, before the
// next append; see TornSuffix), malformed
// lines are skipped and reported, duplicate ids collapse. Loaded entries count as
// persisted and as already uploaded: they are never handed to the uploader. The
// entries the context file dropped after a compaction are in the log; call
// MergeLog to get the full tree. A missing context file is rebuilt from the
// log (a crash between the first flush's two appends); without a log either,
// Load returns an error wrapping bucket.ErrNotFound.
//
// Entries the unsent file beside them names (Files.Unsent: a Flush whose
// hand-over failed wrote them locally all the same) are the exception: they
// are pending for upload again, in the order recorded, and the next Flush
// hands them over before any newer one. An unsent file Load cannot read fails
// the load with an error wrapping ErrUnsentFile.
func Load(ctx context.Context, cfg Config, who Identity, agentID, sessionID string) (*Tree, LoadReport, error) {
	t, rep, err := loadFiles(ctx, cfg, who, agentID, sessionID)
	if err != nil {
		return nil, rep, err
	}
	if err := t.applyUnsent(ctx, &rep); err != nil {
		return nil, rep, fmt.Errorf("load %s: %w", t.ref, err)
	}
	return t, rep, nil
}

// loadFiles is Load but for the unsent file.
func loadFiles(ctx context.Context, cfg Config, who Identity, agentID, sessionID string) (*Tree, LoadReport, error) {
	t, err := newTree(cfg, who, agentID, sessionID)
	if err != nil {
		return nil, LoadReport{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, LoadReport{}, err
	}
	t.stored.fromFiles = true
	data, err := os.ReadFile(t.files.Context)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Stat(t.files.Log); lerr == nil {
			// The process died after the first flush appended to the log,
			// before it created the context file: as for a context file
			// without one complete line, the log is what the flush wrote.
			return t.loadFromLog(ctx, LoadReport{})
		}
		return nil, LoadReport{}, fmt.Errorf("load %s: %w", t.ref, bucket.ErrNotFound)
	}
	if err != nil {
		return nil, LoadReport{}, fmt.Errorf("load %s: %w", t.ref, err)
	}
	d, rep, err := decodeSession(data, false)
	if err != nil && errors.Is(err, pi.ErrInvalidHeader) && d.validLen == 0 {
		// Not one complete line: the process died while the first flush wrote the
		// context file. The log is written first; rebuild from it.
		return t.loadFromLog(ctx, rep)
	}
	if err != nil {
		return nil, rep, fmt.Errorf("load %s: %w", t.ref, err)
	}
	t.header = d.header
	t.headerInCtx, t.headerUploaded = true, true
	flags := inCtx | uploaded
	if st, err := os.Stat(t.files.Log); err == nil && st.Size() > 0 {
		t.headerInLog = true
		flags |= inLog
	}
	t.entries = make([]Entry, 0, len(d.entries))
	t.flags = make([]uint8, 0, len(d.entries))
	t.byID = make(map[string]int, len(d.entries))
	for _, e := range d.entries {
		i := t.add(e, flags)
		if flags&inLog == 0 {
			t.pendingLocal = append(t.pendingLocal, i)
		}
	}
	t.recomputeLeaf()
	merged := t.activePathTruncated()
	if merged {
		// The context file was rewritten after a compaction: it holds what the model
		// reads, but the thinking level and model of the context come from the whole
		// path, which only the log still has. Complete the tree from the log so the
		// context is exactly the one Pi builds from the full file.
		if err := t.mergeLogReport(ctx, &rep); err != nil {
			return nil, rep, fmt.Errorf("load %s: %w", t.ref, err)
		}
	}
	if err := t.leafFromLog(ctx, &rep, merged); err != nil {
		return nil, rep, fmt.Errorf("load %s: %w", t.ref, err)
	}
	if err := t.leafFromSegmentsFile(ctx, &rep); err != nil {
		return nil, rep, fmt.Errorf("load %s: %w", t.ref, err)
	}
	return t, rep, nil
}

// leafFromSegmentsFile sets the active leaf recorded in the segments file when
// that file describes the local files as they are (see segmentsFile.leaf): a pull
// may have left the leaf on an entry before the files' last one, which the order
// of the files alone cannot tell. A leaf the context file lacks is an entry on a
// parent cycle, which only the log holds (cycles.go): the log is merged first.
func (t *Tree) leafFromSegmentsFile(ctx context.Context, rep *LoadReport) error {
	f := readSegmentsFile(t.files.Segments)
	if !f.leafKnown || f.sizes == "" || f.sizes != t.localSizes() {
		return nil
	}
	if f.leaf == "" {
		t.leaf = -1
		return nil
	}
	if _, ok := t.byID[f.leaf]; !ok {
		if err := t.mergeLogReport(ctx, rep); err != nil {
			return err
		}
	}
	if i, ok := t.byID[f.leaf]; ok && t.entries[i].Type() != pi.TypeLeaf {
		t.leaf = i
	}
	return nil
}

// leafFromLog gives the tree the active leaf it had before the files were
// loaded when the context file left it out for lying on a parent cycle
// (cycles.go): the log holds the tree's order, and its active leaf is the
// tree's. It reads only the end of the log unless its last line is an entry the
// context file lacks, or a "leaf" entry whose target it lacks; then it reads
// the log, and merges it only when its active leaf is on a cycle (a flush that
// crashed between the two files also leaves the context file without the
// log's last entries: that tree is loaded as before, and MergeLog adds them).
// merged says the log is merged already.
func (t *Tree) leafFromLog(ctx context.Context, rep *LoadReport, merged bool) error {
	if !merged {
		e, ok := lastEntry(t.files.Log)
		if !ok {
			return nil
		}
		_, held := t.byID[e.ID()]
		if e.Type() == pi.TypeLeaf {
			if target, ok := e.StringField("targetId"); ok {
				_, has := t.byID[target]
				held = held && has
			}
		}
		if held || !t.logLeafOnCycle() {
			return nil
		}
		if err := t.mergeLogReport(ctx, rep); err != nil {
			return err
		}
	}
	t.refreshCycles()
	if i, ok := pi.ActiveLeaf(t.entries, t.byID); ok && t.onCycle(i) {
		t.jumpLeaf(i)
	}
	return nil
}

// logLeafOnCycle reports whether the active leaf of the log's entries lies on
// a parent cycle of them; false when the log cannot be read.
func (t *Tree) logLeafOnCycle() bool {
	data, err := os.ReadFile(t.files.Log)
	if err != nil {
		return false
	}
	d, _, err := decodeSession(data, false)
	if err != nil {
		return false
	}
	i, ok := pi.ActiveLeaf(d.entries, pi.NewIndex(d.entries))
	on := pi.OnParentCycleOf(d.entries)
	return ok && on != nil && on[i]
}

// mergeLogReport is MergeLog, adding what it found to rep.
func (t *Tree) mergeLogReport(ctx context.Context, rep *LoadReport) error {
	logRep, err := t.MergeLog(ctx)
	if err != nil {
		return err
	}
	rep.TornBytes += logRep.TornBytes
	rep.Malformed = append(rep.Malformed, logRep.Malformed...)
	rep.Conflicts = append(rep.Conflicts, logRep.Conflicts...)
	return nil
}

// loadFromLog loads the tree from the log alone, for a context file that holds no
// complete line (rep describes it); the next Flush writes the context file again.
// Without a log header either, the first flush never completed locally: both files
// (and an unsent file) are set aside (their bytes saved to {file}.torn) and the session is not found
// locally, so Open restores it from the uploader's outbox or the store.
func (t *Tree) loadFromLog(ctx context.Context, rep LoadReport) (*Tree, LoadReport, error) {
	logRep, err := t.MergeLog(ctx)
	rep.TornBytes += logRep.TornBytes
	rep.Malformed = append(rep.Malformed, logRep.Malformed...)
	if err != nil && !errors.Is(err, pi.ErrInvalidHeader) {
		return nil, rep, fmt.Errorf("load %s: %w", t.ref, err)
	}
	if err == nil && !t.header.IsZero() {
		t.headerInCtx = false
		return t, rep, nil
	}
	for _, p := range []string{t.files.Context, t.files.Log, t.files.Unsent} {
		if err := setAside(p, t.cfg.NoSync); err != nil {
			return nil, rep, fmt.Errorf("load %s: %w", t.ref, err)
		}
	}
	return nil, rep, fmt.Errorf("load %s: no complete header in the local files: %w", t.ref, bucket.ErrNotFound)
}

// activePathTruncated reports whether the path to the active leaf stops at a
// parent that is not in the tree, as it does in a rewritten context file.
func (t *Tree) activePathTruncated() bool {
	if t.leaf < 0 {
		return false
	}
	path := pi.PathTo(t.entries, t.byID, t.leaf)
	root := t.entries[path[0]]
	parent, ok := root.ParentID()
	if !ok {
		return false
	}
	_, ok = t.byID[parent]
	return !ok
}

// Open loads the session if its context file exists; otherwise, with a
// Config.Store or a Config.Uploader, it restores the session from the store and
// what the uploader still holds (another replica may have started it: behind a
// load balancer any turn can land anywhere); otherwise, or when neither has it, it
// starts a new one with New (h is used only then).
func Open(ctx context.Context, cfg Config, who Identity, agentID, sessionID string, h HeaderOptions) (*Tree, LoadReport, error) {
	t, rep, err := Load(ctx, cfg, who, agentID, sessionID)
	if !errors.Is(err, bucket.ErrNotFound) {
		return t, rep, err
	}
	if cfg.Store != nil || cfg.Uploader != nil {
		t, rep, err = Restore(ctx, cfg, who, agentID, sessionID)
		if !errors.Is(err, bucket.ErrNotFound) {
			return t, rep, err
		}
	}
	t, err = New(cfg, who, agentID, sessionID, h)
	return t, LoadReport{}, err
}

// Import reads a Pi session file of version 1, 2 or 3 from r (migrating older
// versions deterministically) into a new tree. Its entries are new to the store:
// the next Flush writes them locally and hands them (after the header) to the
// uploader. Nothing is written before that Flush.
func Import(cfg Config, who Identity, agentID, sessionID string, r io.Reader) (*Tree, LoadReport, error) {
	t, err := newTree(cfg, who, agentID, sessionID)
	if err != nil {
		return nil, LoadReport{}, err
	}
	h, es, rep, err := ParseSession(r)
	if err != nil {
		return nil, rep, fmt.Errorf("import %s: %w", t.ref, err)
	}
	t.header = h
	for _, e := range es {
		i := t.add(e, 0)
		t.pendingLocal = append(t.pendingLocal, i)
		t.pendingUpload = append(t.pendingUpload, i)
		if e.Type() == pi.TypeCompaction {
			t.rewriteCtx = true // the first Flush writes the compacted context file
		}
	}
	t.recomputeLeaf()
	return t, rep, nil
}

// Restore rebuilds a session, for a replica without local files, from
// Config.Store and from what Config.Uploader still holds for it (its
// PendingEntries: a crash between handing a flush over and writing the local files
// leaves them there); it needs at least one of the two. The stored header entry
// becomes the header; the entries count as uploaded and are written locally by the
// next Flush. It fails with bucket.ErrNotFound when neither has a header for the session,
// and refuses to run when the local context file exists (use Load and
// Pull then).
func Restore(ctx context.Context, cfg Config, who Identity, agentID, sessionID string) (*Tree, LoadReport, error) {
	t, err := newTree(cfg, who, agentID, sessionID)
	if err != nil {
		return nil, LoadReport{}, err
	}
	if cfg.Store == nil && cfg.Uploader == nil {
		return nil, LoadReport{}, fmt.Errorf("restore %s: no Config.Store and no Config.Uploader", t.ref)
	}
	if _, err := os.Stat(t.files.Context); err == nil {
		return nil, LoadReport{}, fmt.Errorf("restore %s: local file %s exists", t.ref, t.files.Context)
	}
	// What the uploader holds first: a segment it stores meanwhile is then in the
	// store when the store is read.
	var pending [][]byte
	if cfg.Uploader != nil {
		if pending, err = cfg.Uploader.PendingEntries(ctx, t.ref); err != nil {
			return nil, LoadReport{}, fmt.Errorf("restore %s: %w", t.ref, err)
		}
	}
	var rep LoadReport
	if cfg.Store != nil {
		if rep, err = t.Pull(ctx); err != nil {
			return nil, rep, err
		}
	}
	if len(pending) > 0 {
		t.mu.Lock()
		prep := t.mergeStored(unstoredVersions(pending))
		t.mu.Unlock()
		rep.Added += prep.Added
		rep.Duplicates += prep.Duplicates
		rep.Conflicts = append(rep.Conflicts, prep.Conflicts...)
		rep.Malformed = append(rep.Malformed, prep.Malformed...)
	}
	if t.header.IsZero() {
		return nil, rep, fmt.Errorf("restore %s: no session header in the store: %w", t.ref, bucket.ErrNotFound)
	}
	return t, rep, nil
}
