package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/transcriptstore/transcript/segment"
)

// readInto fetches and decodes the segments not yet in st.segs. A segment that fails
// verification gives an error wrapping ErrCompactInput.
func (s *Store) readInto(ctx context.Context, st *compactState, infos []SegmentInfo) error {
	var need []SegmentInfo
	for _, in := range infos {
		if st.segs[in.Key] == nil {
			need = append(need, in)
		}
	}
	segs, _, err := s.fetchAll(ctx, need, false)
	if err != nil {
		if errors.Is(err, segment.ErrCorrupt) {
			return fmt.Errorf("%w: %w", ErrCompactInput, err)
		}
		return err
	}
	for i, in := range need {
		st.segs[in.Key] = segs[i]
	}
	return nil
}

// checkContained verifies that segment in, superseded by out, holds no entry that
// out lacks (byte for byte), before in is marked or deleted on the word of out's
// metadata. in must have been read (readInto).
func (s *Store) checkContained(st *compactState, in SegmentInfo, out string) error {
	have := st.contents[out]
	if have == nil {
		have = entrySet(st.segs[out])
		st.contents[out] = have
	}
	if pos := firstMissing(have, st.segs[in.Key]); pos >= 0 {
		return unheldError(out, in.Key, st.segs[in.Key].Entries[pos], pos)
	}
	return nil
}

// entrySet returns the raw entries of seg as a set.
func entrySet(seg *segment.Segment) map[string]bool {
	have := make(map[string]bool, len(seg.Entries))
	for _, raw := range seg.Entries {
		have[string(raw)] = true
	}
	return have
}

// firstMissing returns the position of the first entry of in that is not in have,
// or -1.
func firstMissing(have map[string]bool, in *segment.Segment) int {
	for pos, raw := range in.Entries {
		if !have[string(raw)] {
			return pos
		}
	}
	return -1
}

// unheldError reports that segment out names in as an input but lacks its entry raw
// (at pos in in). The entry id is quoted, so no byte of it reaches a terminal raw.
func unheldError(out, in string, raw []byte, pos int) *UnheldInput {
	u := &UnheldInput{Superseder: out, Input: in, Entry: fmt.Sprintf("at position %d", pos)}
	if e, err := ParseEntry(raw); err == nil {
		u.Entry = strconv.Quote(e.ID)
	}
	return u
}

// UnheldInputs checks the claims of the compacted segments among segs (decoded, one
// per element of infos, nil for one that could not be read): for every segment that
// one of them supersedes (see superseders) and that was read, it returns an error
// (an *UnheldInput, naming both keys) if the superseder lacks an entry of it.
// Readers keep reading such inputs while they exist, and Compact never deletes them.
func UnheldInputs(infos []SegmentInfo, segs []*segment.Segment) []*UnheldInput {
	sup := superseders(infos, segs)
	byKey := make(map[string]*segment.Segment, len(infos))
	for i, in := range infos {
		byKey[in.Key] = segs[i]
	}
	sets := map[string]map[string]bool{}
	var errs []*UnheldInput
	for i, in := range infos {
		out, ok := supersededIn(sup, in)
		if !ok || segs[i] == nil || byKey[out.Key] == nil {
			continue
		}
		if sets[out.Key] == nil {
			sets[out.Key] = entrySet(byKey[out.Key])
		}
		if pos := firstMissing(sets[out.Key], segs[i]); pos >= 0 {
			errs = append(errs, unheldError(out.Key, in.Key, segs[i].Entries[pos], pos))
		}
	}
	return errs
}

// compactLevel merges live (segments of one level) into one segment of the next.
func (s *Store) compactLevel(ctx context.Context, ref TranscriptRef, st *compactState, live []SegmentInfo, opts CompactOptions) (Compaction, error) {
	c := Compaction{Level: live[0].Level, Inputs: live}
	for _, in := range live {
		c.BytesIn += in.Size
	}
	if err := s.readInto(ctx, st, live); err != nil {
		return c, err
	}
	segs := make([]*segment.Segment, len(live))
	for i, in := range live {
		segs[i] = st.segs[in.Key]
	}
	m := merge(live, segs)
	if len(m.Invalid) > 0 {
		return c, fmt.Errorf("%w: %w", ErrCompactInput, errors.Join(m.Invalid...))
	}
	// Keep the versions the merge dropped, after the kept ones, so that compaction
	// loses no bytes that were ever written; every entry keeps its origin.
	all := append(slices.Clip(m.Entries), m.Losers...)
	entries := make([][]byte, len(all))
	origins := make([]segment.Origin, len(all))
	for i, e := range all {
		entries[i] = e.Raw
		origins[i] = segment.Origin{Key: e.Origin.Key, Pos: uint32(e.Origin.Pos)}
	}
	c.Entries = len(entries)
	inputs := make([]string, len(live))
	for i, in := range live {
		inputs[i] = sessionRelKey(in.Key)
	}
	obj, err := s.prepare(ref, entries, opts.Writer, c.Level+1, inputs, origins)
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrCompactInput, err)
	}
	c.BytesOut = int64(len(obj.Data))
	if opts.DryRun {
		return c, nil
	}
	if err := s.PutSegment(ctx, obj.Info.Key, obj.Data); err != nil {
		return c, err
	}
	c.Output = obj.Info
	seg := &segment.Segment{Meta: obj.Meta, Entries: entries}
	st.segs[obj.Info.Key] = seg
	st.infos = append(st.infos, obj.Info)
	st.present[obj.Info.Key] = obj.Info
	for _, in := range live {
		st.sup[sessionRelKey(in.Key)] = obj.Info
	}
	return c, nil
}
