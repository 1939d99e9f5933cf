package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

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

// readMetasOf reads the metadata frames of the segments infos (ranged GETs, see
// ReadSegmentMeta) and returns them as segments without entries, one per element. A frame
// that fails verification, or names another checksum than the key, gives an error
// wrapping ErrCompactInput.
func (s *Store) readMetasOf(ctx context.Context, infos []SegmentInfo) ([]*segment.Segment, error) {
	out := make([]*segment.Segment, len(infos))
	err := s.eachMeta(ctx, infos, func(_ context.Context, i int, m segment.Meta, err error) error {
		switch in := infos[i]; {
		case errors.Is(err, segment.ErrCorrupt), errors.Is(err, segment.ErrUnsupportedVersion):
			return fmt.Errorf("%w: %w", ErrCompactInput, err)
		case err != nil:
			return err
		case KeyChecksum(m) != in.Hash:
			return fmt.Errorf("%w: read segment %s: %w: key names checksum %016x, metadata has %016x",
				ErrCompactInput, in.Key, segment.ErrChecksum, in.Hash, KeyChecksum(m))
		}
		out[i] = &segment.Segment{Meta: m}
		return nil
	})
	return out, err
}

// checkContained verifies that segment in, superseded by out (a part of a group,
// or a segment of its own), holds no entry that out's whole group lacks (byte for
// byte), before in is marked or deleted on the word of out's metadata. in must have
// been read (readInto); the parts are read here when needed. A group that is not
// whole (a part missing now) gives an *IncompleteGroup error wrapping
// ErrCompactInput.
func (s *Store) checkContained(ctx context.Context, st *compactState, in SegmentInfo, out string) error {
	g := st.groupOf[out]
	if g == nil || !st.wholeNow(out) {
		return fmt.Errorf("%w: %s: %w", ErrCompactInput, in.Key, st.incomplete(out))
	}
	have := st.contents[g.id]
	if have == nil {
		if err := s.readInto(ctx, st, g.parts); err != nil {
			return err
		}
		parts := make([]*segment.Segment, len(g.parts))
		for i, p := range g.parts {
			parts[i] = st.segs[p.Key]
		}
		have = groupEntries(parts)
		st.contents[g.id] = have
	}
	if pos := firstMissing(have, st.segs[in.Key]); pos >= 0 {
		return unheldError(out, in.Key, st.segs[in.Key].Entries[pos], pos)
	}
	return nil
}

// firstMissing returns the position of the first entry of in that is not in have,
// or -1.
func firstMissing(have *entrySet, in *segment.Segment) int {
	for pos, raw := range in.Entries {
		if !have.has(raw, segment.EntryRefs(in.Meta.Refs, uint32(pos))) {
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
// a whole group of them supersedes (see superseders) and that was read, it returns
// an error (an *UnheldInput, naming the claiming part and the input) if the group's
// parts together lack an entry of it. Readers keep reading such inputs while they
// exist, and Compact never deletes them. Groups that are not whole claim nothing
// (see IncompleteGroups).
func UnheldInputs(infos []SegmentInfo, segs []*segment.Segment) []*UnheldInput {
	sup := superseders(infos, segs)
	groupOf := map[string]*segGroup{}
	for _, g := range groupsOf(infos, segs) {
		for _, p := range g.parts {
			groupOf[p.Key] = g
		}
	}
	sets := map[string]*entrySet{}
	var errs []*UnheldInput
	for i, in := range infos {
		out, ok := supersededIn(sup, in)
		g := groupOf[out.Key]
		if !ok || segs[i] == nil || g == nil {
			continue
		}
		if sets[g.id] == nil {
			sets[g.id] = groupEntries(g.segs)
		}
		if pos := firstMissing(sets[g.id], segs[i]); pos >= 0 {
			errs = append(errs, unheldError(out.Key, in.Key, segs[i].Entries[pos], pos))
		}
	}
	return errs
}

// compactLevel merges live (segments of one level) into the next level: one
// segment, or, when the merged entries exceed opts.TargetSegmentSize, a group of
// parts (in merge order) that each name every input. Parts are encoded and stored
// one at a time, so only one part's encoded bytes are held at once.
func (s *Store) compactLevel(ctx context.Context, ref TranscriptRef, st *compactState, live []SegmentInfo, opts CompactOptions) (Compaction, error) {
	c := Compaction{Inputs: live}
	for _, in := range live {
		c.BytesIn += in.Size
		c.Level = max(c.Level, in.Level) // one level, except in a full compaction
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
	refs := make([][]segment.PayloadRef, len(all)) // copied, never resolved
	for i, e := range all {
		entries[i], refs[i] = e.Raw, e.Refs
		origins[i] = segment.Origin{Key: e.Origin.Key, Pos: uint32(e.Origin.Pos)}
	}
	m, all = nil, nil
	c.Entries = len(entries)
	inputs := make([]string, len(live))
	for i, in := range live {
		inputs[i] = sessionRelKey(in.Key)
	}
	runs := SplitBatch(entries, opts.TargetSegmentSize)
	var group segment.Group
	if len(runs) > 1 {
		id, err := newGroupID(opts.Writer)
		if err != nil {
			return c, err
		}
		group = segment.Group{ID: id, Parts: uint32(len(runs))}
	}
	g := &segGroup{level: c.Level + 1, parts: make([]SegmentInfo, len(runs)),
		segs: make([]*segment.Segment, len(runs)), inputs: inputs}
	off := 0
	for i, run := range runs {
		if !group.IsZero() {
			group.Part = uint32(i)
		}
		obj, err := s.prepare(ref, run, opts.Writer, c.Level+1, inputs, origins[off:off+len(run)], group, refs[off:off+len(run)])
		if err != nil {
			return c, fmt.Errorf("%w: %w", ErrCompactInput, err)
		}
		off += len(run)
		c.BytesOut += int64(len(obj.Data))
		if opts.DryRun {
			continue
		}
		st.lastPut = time.Now()
		if err := s.PutSegment(ctx, obj.Info.Key, obj.Data); err != nil {
			if len(runs) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(runs), err)
			}
			return c, err
		}
		c.Outputs = append(c.Outputs, obj.Info)
		g.parts[i], g.segs[i] = obj.Info, &segment.Segment{Meta: obj.Meta, Entries: run}
	}
	if opts.DryRun {
		return c, nil
	}
	c.Output = c.Outputs[0]
	g.id, _, _ = groupID(g.parts[0], g.segs[0])
	for i, p := range g.parts {
		st.segs[p.Key] = g.segs[i]
		st.infos = append(st.infos, p)
		st.present[p.Key] = p
		st.groupOf[p.Key] = g
	}
	for _, in := range live {
		st.sup[sessionRelKey(in.Key)] = c.Output
	}
	return c, nil
}
