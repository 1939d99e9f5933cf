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
func (v *sessionVerifier) checkMarkedLoss(ctx context.Context) error {
	if v.vanished > 0 {
		return nil // a compaction deleted segments meanwhile: checked again
	}
	marks, err := v.readMarks(ctx)
	if err != nil || len(marks) == 0 {
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
	for range marks {
		grew := false
		for _, m := range marks {
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
	for _, m := range marks {
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

// readMarks lists the session's deletion marks and reads those that parse as
// one, their keys relative to the session. A mark deleted since the listing
// (the job collected it) is left out.
func (v *sessionVerifier) readMarks(ctx context.Context) ([]keyedMark, error) {
	b := v.s.Bucket()
	prefix := v.s.SessionPrefix(v.ref) + "gc/L"
	var keys []string
	err := b.List(ctx, bucket.ListOptions{Prefix: prefix}, func(oi bucket.ObjectInfo) error {
		if !oi.IsPrefix && strings.HasSuffix(oi.Key, ".mark.json") {
			keys = append(keys, oi.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the deletion marks of %s: %w", v.ref, err)
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
