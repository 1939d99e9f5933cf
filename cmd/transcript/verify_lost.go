package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// markedLoss is what a deletion mark says (docs/STORAGE.md, Deletion marks):
// a compaction's output and the inputs it supersedes, relative to the session.
type markedLoss struct {
	SupersededBy string   `json:"supersededBy"`
	Inputs       []string `json:"inputs"`
}

// checkMarkedLoss reports the segments that a deletion mark names as the inputs
// of a compaction when neither they nor any segment holding their entries is
// there: the compacted segment is gone too, and no segment listed holds either
// (a compacted segment of a higher level names what it holds, and a mark names
// what its own compacted segment holds). A mark lives only while its inputs
// wait for their delete delay, and the job deletes an input only once its
// superseder is checked to hold it, so such a segment is lost: a copy of the
// bucket that left it out (an interrupted rclone), or an object lost. Its
// entries may hold nothing any other entry names, so the tree checks cannot
// see the loss. Marks whose content is not a mark are reported elsewhere
// (Store.Leftovers) and ignored here.
//
// marks waits for the session's marks (readMarksAsync), read while the
// segments were.
func (v *sessionVerifier) checkMarkedLoss(marks func() ([]keyedMark, error)) error {
	ms, err := marks()
	if err != nil || len(ms) == 0 || v.vanished > 0 {
		// v.vanished: a compaction deleted segments meanwhile; checked again.
		return err
	}
	present := map[string]bool{}
	covered := map[string]bool{}
	for i, info := range v.segs {
		rel := segmentRel(info.Key)
		present[rel], covered[rel] = true, true
		if v.decoded[i] != nil {
			for _, in := range v.decoded[i].Meta.Inputs {
				covered[segmentRel(in)] = true
			}
		}
	}
	// What a covered compacted segment superseded is covered: down every level,
	// at most one pass per mark.
	for range ms {
		grew := false
		for _, m := range ms {
			if !covered[m.mark.SupersededBy] {
				continue
			}
			for _, in := range m.mark.Inputs {
				if !covered[in] {
					covered[in], grew = true, true
				}
			}
		}
		if !grew {
			break
		}
	}
	for _, m := range ms {
		for _, in := range m.mark.Inputs {
			if !covered[in] && !present[in] {
				v.report(m.key, "the compaction this deletion mark records merged %s into %s, and both are missing: "+
					"the entries of %s are lost to every reader (a segment lost, or left out of a copy of the bucket)",
					in, m.mark.SupersededBy, in)
			}
		}
	}
	return nil
}

// keyedMark is a deletion mark and its key.
type keyedMark struct {
	key  string
	mark markedLoss
}

// readMarksAsync starts readMarks and returns a function that waits for its
// result: the marks' listing and reads overlap the session's other reads, so
// that the check costs no extra round trip in the common case (no mark). A
// mark exists only once the compacted segment it names was stored, so a mark
// read before or after the session's listing names nothing that listing could
// have missed without showing its superseder (keys list in order, the lower
// levels first); checkMarkedLoss gives up when a segment vanished meanwhile.
func (v *sessionVerifier) readMarksAsync(ctx context.Context) func() ([]keyedMark, error) {
	type result struct {
		marks []keyedMark
		err   error
	}
	ch := make(chan result, 1) // the reader never blocks, waited for or not
	go func() {
		m, err := v.readMarks(ctx)
		ch <- result{m, err}
	}()
	return func() ([]keyedMark, error) {
		r := <-ch
		return r.marks, r.err
	}
}

// readMarks lists the session's deletion marks and reads those that parse as
// one, their keys relative to the session. A mark deleted since the listing
// (the job collected it) is left out.
func (v *sessionVerifier) readMarks(ctx context.Context) ([]keyedMark, error) {
	// Delimited listings: one of the levels' folders under gc/ (none, but
	// while a compaction's inputs wait), then one of each folder's marks.
	b := v.s.Bucket()
	var levels, keys []string
	list := func(prefix string, fn func(oi bucket.ObjectInfo)) error {
		err := b.List(ctx, bucket.ListOptions{Prefix: prefix, Delimited: true}, func(oi bucket.ObjectInfo) error {
			fn(oi)
			return nil
		})
		if err != nil {
			return fmt.Errorf("list the deletion marks of %s: %w", v.ref, err)
		}
		return nil
	}
	err := list(v.s.SessionPrefix(v.ref)+"gc/L", func(oi bucket.ObjectInfo) {
		if oi.IsPrefix {
			levels = append(levels, oi.Key)
		}
	})
	for _, l := range levels {
		if err == nil {
			err = list(l, func(oi bucket.ObjectInfo) {
				if !oi.IsPrefix && strings.HasSuffix(oi.Key, ".mark.json") {
					keys = append(keys, oi.Key)
				}
			})
		}
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(keys)
	var marks []keyedMark
	for _, k := range keys {
		m, ok, err := readMarkedLoss(ctx, b, k)
		if err != nil {
			return nil, err
		}
		if ok {
			marks = append(marks, keyedMark{key: k, mark: m})
		}
	}
	return marks, nil
}

// readMarkedLoss reads the deletion mark at key; ok is false when it is gone
// or does not parse as a mark.
func readMarkedLoss(ctx context.Context, b bucket.Bucket, key string) (m markedLoss, ok bool, err error) {
	rc, _, err := b.Get(ctx, key)
	if errors.Is(err, bucket.ErrNotFound) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("read deletion mark %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return m, false, fmt.Errorf("read deletion mark %s: %w", key, err)
	}
	if json.Unmarshal(data, &m) != nil || m.SupersededBy == "" {
		return m, false, nil
	}
	m.SupersededBy = segmentRel(m.SupersededBy)
	for i, in := range m.Inputs {
		m.Inputs[i] = segmentRel(in)
	}
	return m, true, nil
}

// segmentRel is a segment key relative to its session: its level and name
// ("L0/…jsonl.zst"), whether key is whole or relative.
func segmentRel(key string) string {
	return path.Join(path.Base(path.Dir(key)), path.Base(key))
}

// readSummaryAsync starts reading the session's summary object (a list's cache
// of a default-mode session, docs/STORAGE.md) and returns a function that
// waits for it: ok is false when there is none, or it does not parse (a list
// derives it again).
func (v *sessionVerifier) readSummaryAsync(ctx context.Context) func() (transcript.CachedSummary, bool, error) {
	type result struct {
		cs  transcript.CachedSummary
		ok  bool
		err error
	}
	ch := make(chan result, 1) // the reader never blocks, waited for or not
	go func() {
		cs, err := v.s.ReadSummary(ctx, v.ref)
		switch {
		case errors.Is(err, bucket.ErrNotFound), errors.Is(err, transcript.ErrInvalidHead):
			ch <- result{}
		default:
			ch <- result{cs, err == nil, err}
		}
	}()
	return func() (transcript.CachedSummary, bool, error) {
		r := <-ch
		return r.cs, r.ok, r.err
	}
}

// checkSummary reports what the session's summary object says it held and
// its segments no longer hold: a list derived it from the session as it was
// (entries are never taken out of a session), so an active leaf it names that
// no segment holds, or more entries than the segments hold, are entries lost
// since (a segment lost, or left out of a copy of the bucket), even where no
// other entry names them (the last segments of a session). Only a session
// without a head has one; a stale summary counts fewer entries, never more.
func (v *sessionVerifier) checkSummary(summary func() (transcript.CachedSummary, bool, error), strict bool) error {
	cs, ok, err := summary()
	if err != nil || !ok || strict || v.vanished > 0 {
		return err
	}
	key := v.s.SessionPrefix(v.ref) + transcript.SummaryName
	if leaf := cs.Leaf; leaf != "" {
		if _, held := v.seen[leaf]; !held {
			v.report(key, "the session's summary (a list's cache) names its active leaf %s, which no segment holds: "+
				"entries are lost (a segment lost, or left out of a copy of the bucket)", cmdcli.Escape(leaf))
			return nil
		}
	}
	if n := cs.Summary.Entries; n > v.c.entries {
		v.report(key, "the session's summary (a list's cache) counted %s, its segments hold %d: "+
			"entries are lost (a segment lost, or left out of a copy of the bucket)", cmdcli.Count(n, "entry"), v.c.entries)
	}
	return nil
}
