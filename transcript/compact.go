package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// DefaultMinSegments is how many segments a level must hold before Compact merges them.
const DefaultMinSegments = 4

// DefaultDeleteDelay is how long a superseded segment stays readable after it was
// marked for deletion.
const DefaultDeleteDelay = 10 * time.Minute

// DeleteAtOnce, as CompactOptions.DeleteDelay, deletes superseded segments in the run
// that marks them. A reader that listed them a moment before may then have to list
// again (see Config.MaxRelists); use it for tests and buckets nobody reads.
const DeleteAtOnce time.Duration = -1

// ErrCompactInput is wrapped by Compact errors about an input it cannot compact
// without losing something: a segment that fails verification, or an entry without
// a usable id. The session is left as it was.
var ErrCompactInput = errors.New("cannot compact input")

// markDir is the element under a session's prefix that holds deletion marks. Mark keys
// have more elements than segment keys, so listings of segments skip them.
const markDir = "gc"

// markExt ends every deletion mark key.
const markExt = ".mark.json"

// CompactOptions tune Compact. The zero value is usable.
type CompactOptions struct {
	// MinSegments is how many unsuperseded segments a level needs before they are
	// merged into one segment of the next level (default DefaultMinSegments; at
	// least 2).
	MinSegments int
	// DeleteDelay is how long a marked input stays before Compact deletes it, so a
	// reader that listed it a moment ago can still fetch it. Zero means
	// DefaultDeleteDelay; DeleteAtOnce (any negative value) deletes in the same run.
	DeleteDelay time.Duration
	// DryRun plans without writing or deleting anything.
	DryRun bool
	// OlderThan, when positive, leaves a session alone if any of its segments was
	// stored less than OlderThan ago (a session being written right now;
	// CompactResult.SkippedRecent). The age is measured on the bucket's clock
	// (bucket.Clock) from the object's ModTime as the bucket lists it, never from the
	// time in the key or the job's clock.
	OlderThan time.Duration
	// Writer names the compacted segments (default: NewRandomWriter).
	Writer *Writer
}

// Compaction is one merge of a level's segments into one segment of the next level.
type Compaction struct {
	// Level is the level of the inputs; the output is Level+1.
	Level int
	// Inputs are the merged segments, in key order.
	Inputs []SegmentInfo
	// Output is the written segment (zero in a dry run).
	Output SegmentInfo
	// Entries is how many entries the output holds.
	Entries int
	// BytesIn and BytesOut are the stored sizes of inputs and output.
	BytesIn, BytesOut int64
}

// CompactResult reports what Compact did (or, in a dry run, would do) to one session.
type CompactResult struct {
	Ref TranscriptRef
	// Segments is how many segments were listed.
	Segments int
	// Compactions lists the merges, lowest level first.
	Compactions []Compaction
	// Marked counts deletion marks written (for this run's inputs and for inputs of
	// an earlier run that stopped before marking them).
	Marked int
	// Deleted counts superseded segments deleted because their mark was due.
	Deleted int
	// Pending counts marked segments whose delete delay has not passed.
	Pending int
	// Contended reports that the session kept changing under this run (another
	// compaction deleted what it had listed, Config.MaxRelists+1 times): it stopped
	// and left the session to the other job.
	Contended bool
	// SkippedRecent reports a session left alone for CompactOptions.OlderThan.
	SkippedRecent bool
	// SkippedStrict reports a strict session (one with a HeadName object), which
	// Compact leaves as it is.
	SkippedStrict bool
	// StaleMarks counts marked segments kept because nothing present supersedes them
	// any more (their mark is removed).
	StaleMarks int
	// Unverified counts marked segments kept because the segment that claims to
	// supersede them lacks some of their entries (a forged or damaged superseder;
	// Compact then returns an error wrapping ErrCompactInput naming both).
	Unverified int
}

// SegmentsIn returns how many segments were merged; SegmentsOut how many were written.
func (r *CompactResult) SegmentsIn() int {
	n := 0
	for _, c := range r.Compactions {
		n += len(c.Inputs)
	}
	return n
}

// SegmentsOut returns how many compacted segments were written (or planned).
func (r *CompactResult) SegmentsOut() int { return len(r.Compactions) }

// BytesIn returns the stored bytes of every input; BytesOut those of every output.
func (r *CompactResult) BytesIn() int64 {
	var n int64
	for _, c := range r.Compactions {
		n += c.BytesIn
	}
	return n
}

// BytesOut returns the stored bytes of the written segments.
func (r *CompactResult) BytesOut() int64 {
	var n int64
	for _, c := range r.Compactions {
		n += c.BytesOut
	}
	return n
}

// deletionMark is the content of a mark object: the inputs of one compacted segment,
// marked for deletion at one time. One object per compaction keeps the requests of a
// compaction independent of how many inputs it had.
//
// A mark is only a schedule: it says when an input may go, never that it may. Its age
// is the ModTime the bucket reports for the mark object (MarkedAt in the JSON is for
// people and is never read back), and before an input is deleted the segment that
// supersedes it is checked, then and there, to hold every entry of it.
type deletionMark struct {
	SupersededBy string    `json:"supersededBy"`
	Inputs       []string  `json:"inputs"`
	MarkedAt     time.Time `json:"markedAt"`
	key          string
	// fresh marks a mark this run wrote: it is never due in the same run unless
	// the delete delay is zero.
	fresh bool
}

// markKey returns the key of the deletion mark of the inputs of the compacted
// segment out, in session ref.
func (s *Store) markKey(ref TranscriptRef, out string) string {
	sp := sessionPrefix(s.cfg.Prefix, ref)
	rel := strings.TrimSuffix(strings.TrimPrefix(out, sp), SegmentExt)
	return sp + markDir + "/" + rel + markExt
}

// Compact merges the segments of ref level by level: a level with at least
// MinSegments segments that no other segment supersedes becomes one segment of the
// next level holding their union (deduplicated, in merge order, conflicting versions
// of an id kept after the chosen one) and naming them as its inputs. Only after that
// segment is stored are the inputs marked for deletion; an input is deleted once its
// mark object is DeleteDelay old on the bucket's clock and a segment that exists now
// and supersedes it holds every one of its entries, byte for byte (checked before the
// delete, whoever wrote the mark or the superseding segment).
//
// Compact never touches a segment it did not read: a segment written while it runs is
// neither an input nor marked. It is idempotent and resumable: run again after a crash
// it marks the inputs of outputs already written instead of merging them again. Two
// runs on one session at once may both write an output; readers collapse the
// duplicates; if another job keeps deleting what a run listed, the run stops and
// reports CompactResult.Contended. A segment that fails verification stops the
// session with an error wrapping ErrCompactInput and changes nothing.
func (s *Store) Compact(ctx context.Context, ref TranscriptRef, opts CompactOptions) (CompactResult, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return CompactResult{}, err
	}
	if !visible {
		return CompactResult{}, fmt.Errorf("compact %s: %w", ref, ErrNotFound)
	}
	if opts.MinSegments < 2 {
		opts.MinSegments = DefaultMinSegments
	}
	switch {
	case opts.DeleteDelay == 0:
		opts.DeleteDelay = DefaultDeleteDelay
	case opts.DeleteDelay < 0:
		opts.DeleteDelay = 0
	}
	if opts.Writer == nil {
		opts.Writer = NewRandomWriter()
	}
	for attempt := 0; ; attempt++ {
		res, err := s.compactOnce(ctx, ref, opts)
		if errors.Is(err, ErrNotFound) {
			// A listed segment or mark vanished: another job is compacting the
			// session. Look again a little later; if it keeps changing, leave it to
			// that job. Nothing this run did can lose data (it only writes outputs
			// holding what it read, and marks inputs those outputs hold).
			if attempt < s.cfg.MaxRelists {
				if !sleepCtx(ctx, time.Duration(attempt+1)*20*time.Millisecond) {
					return res, fmt.Errorf("compact %s: %w", ref, ctx.Err())
				}
				continue
			}
			res.Contended = true
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("compact %s: %w", ref, err)
		}
		return res, nil
	}
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// compactState is one session's listing with what Compact learned about it.
type compactState struct {
	infos []SegmentInfo
	segs  map[string]*segment.Segment // decoded segments by key
	// contents holds the raw entries of compacted segments, by key, once
	// checkContained needed them.
	contents map[string]map[string]bool
	// sup holds the segments that supersede others (see superseders).
	sup     map[string]SegmentInfo
	present map[string]SegmentInfo
}

// supersededBy returns the key of the segment that supersedes the segment at key,
// if that one is listed.
func (st *compactState) supersededBy(key string) (string, bool) {
	in, ok := st.present[key]
	if !ok {
		return "", false
	}
	by, ok := supersededIn(st.sup, in)
	return by.Key, ok
}

func (s *Store) compactOnce(ctx context.Context, ref TranscriptRef, opts CompactOptions) (CompactResult, error) {
	res := CompactResult{Ref: ref}
	ls, err := s.sessionObjects(ctx, ref)
	if err != nil {
		return res, err
	}
	infos, markKeys, strict := ls.infos, ls.marks, ls.strict
	res.Segments = len(infos)
	now, err := s.bucketNow(ctx)
	if err != nil {
		return res, err
	}
	if opts.OlderThan > 0 && now.Sub(ls.newest) < opts.OlderThan {
		res.SkippedRecent = true
		return res, nil
	}
	if strict {
		// Merging would replace segments the head names; the repository would then
		// refuse the session as damaged.
		res.SkippedStrict = true
		return res, nil
	}
	st := &compactState{infos: infos, segs: map[string]*segment.Segment{}, present: map[string]SegmentInfo{},
		contents: map[string]map[string]bool{}}
	for _, in := range infos {
		st.present[in.Key] = in
	}
	// Read every compacted segment: their inputs are superseded.
	var upper []SegmentInfo
	for _, in := range infos {
		if in.Level > 0 {
			upper = append(upper, in)
		}
	}
	if err := s.readInto(ctx, st, upper); err != nil {
		return res, err
	}
	upperSegs := make([]*segment.Segment, len(upper))
	for i, in := range upper {
		upperSegs[i] = st.segs[in.Key]
	}
	st.sup = superseders(upper, upperSegs)
	marks, err := s.readMarks(ctx, ref, markKeys)
	if err != nil {
		return res, err
	}
	marked := map[string]bool{}
	for _, m := range marks {
		for _, k := range m.Inputs {
			marked[k] = true
		}
	}
	// Resume: inputs of an output written by a run that stopped before marking them.
	var resume []SegmentInfo
	for _, in := range infos {
		if _, ok := st.supersededBy(in.Key); ok && !marked[in.Key] {
			resume = append(resume, in)
		}
	}
	if err := s.readInto(ctx, st, resume); err != nil {
		return res, err
	}
	unmarked := map[string][]string{} // output -> its unmarked present inputs
	var outs []string
	for _, in := range resume {
		out, _ := st.supersededBy(in.Key)
		if err := s.checkContained(st, in, out); err != nil {
			return res, err
		}
		if unmarked[out] == nil {
			outs = append(outs, out)
		}
		unmarked[out] = append(unmarked[out], in.Key)
	}
	for _, out := range outs {
		if !opts.DryRun {
			m, err := s.putMark(ctx, ref, out, unmarked[out])
			if err != nil {
				return res, err
			}
			marks = append(marks, m)
		}
		res.Marked += len(unmarked[out])
	}
	// Merge every level that has enough live segments, lowest first; an output
	// counts toward the next level.
	for level := 0; level < 255; level++ {
		var live []SegmentInfo
		maxLevel := 0
		for _, in := range st.infos {
			maxLevel = max(maxLevel, in.Level)
			if _, sup := st.supersededBy(in.Key); in.Level == level && !sup {
				live = append(live, in)
			}
		}
		if level > maxLevel {
			break
		}
		if len(live) < opts.MinSegments {
			continue
		}
		c, err := s.compactLevel(ctx, ref, st, live, opts)
		if err != nil {
			return res, err
		}
		res.Compactions = append(res.Compactions, c)
		if opts.DryRun {
			continue
		}
		inputs := make([]string, len(live))
		for i, in := range live {
			inputs[i] = in.Key
		}
		m, err := s.putMark(ctx, ref, c.Output.Key, inputs)
		if err != nil {
			return res, err
		}
		marks = append(marks, m)
		res.Marked += len(inputs)
	}
	return res, s.collect(ctx, st, marks, now, opts, &res)
}

// bucketNow returns the time on the clock that stamps the bucket's objects
// (bucket.Clock), or the store's clock for a bucket that cannot tell.
func (s *Store) bucketNow(ctx context.Context) (time.Time, error) {
	c, ok := s.cfg.Bucket.(bucket.Clock)
	if !ok {
		return s.cfg.Now(), nil
	}
	t, err := c.Now(ctx)
	if err != nil {
		return t, fmt.Errorf("read the bucket's clock: %w", err)
	}
	return t, nil
}

// sessionKey returns the full key of a segment of ref named relative to its session
// (or by a full key, perhaps under another prefix: only its last two elements count).
func (s *Store) sessionKey(ref TranscriptRef, key string) string {
	return sessionPrefix(s.cfg.Prefix, ref) + sessionRelKey(key)
}

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

// UnheldInput reports a compacted segment that names as its input a segment whose
// entry it does not hold (a forged or damaged superseder). It wraps ErrCompactInput.
type UnheldInput struct {
	// Superseder is the key of the segment that claims the input; Input the key of
	// the claimed segment.
	Superseder, Input string
	// Entry names the first missing entry: its id, quoted, or its position.
	Entry string
}

// Error names both segments and the missing entry.
func (u *UnheldInput) Error() string {
	return fmt.Sprintf("%v: segment %s names %s as an input but lacks its entry %s",
		ErrCompactInput, u.Superseder, u.Input, u.Entry)
}

// Unwrap returns ErrCompactInput.
func (u *UnheldInput) Unwrap() error { return ErrCompactInput }

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

// StrayKeys returns the keys under ref's prefix that are neither a segment key, a
// deletion mark nor the strict head (for example ".../L1/x/L0/y", which an access
// policy's key pattern may let a writer create). Readers and Compact ignore them.
func (s *Store) StrayKeys(ctx context.Context, ref TranscriptRef) ([]string, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return nil, err
	}
	ls, err := s.sessionObjects(ctx, ref)
	return ls.stray, err
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

// HeadName is the object name of a strict session's head (see package repository),
// under the session's key prefix. Compact leaves a session that has one alone: the
// head names the committed segments, and only the repository may move it.
const HeadName = "HEAD.json"

// sessionListing is what one listing of a session's prefix found.
type sessionListing struct {
	infos  []SegmentInfo       // the segments, in key order
	marks  []bucket.ObjectInfo // the deletion marks
	strict bool                // a strict head exists
	newest time.Time           // the latest ModTime of a segment
	// stray holds the keys under the prefix that are neither a segment, a mark nor
	// the head (readers ignore them; verify names them).
	stray []string
}

// sessionObjects lists everything under ref's prefix in one listing.
func (s *Store) sessionObjects(ctx context.Context, ref TranscriptRef) (sessionListing, error) {
	sp := sessionPrefix(s.cfg.Prefix, ref)
	var ls sessionListing
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: sp}, func(oi bucket.ObjectInfo) error {
		rel := strings.TrimPrefix(oi.Key, sp)
		switch {
		case rel == HeadName:
			ls.strict = true
		case isMarkName(rel):
			ls.marks = append(ls.marks, oi)
		default:
			info, err := ParseKey(s.cfg.Prefix, oi.Key)
			if err != nil {
				ls.stray = append(ls.stray, oi.Key)
				return nil
			}
			info.Size = oi.Size
			ls.infos = append(ls.infos, info)
			if oi.ModTime.After(ls.newest) {
				ls.newest = oi.ModTime
			}
		}
		return nil
	})
	if err != nil {
		return sessionListing{}, fmt.Errorf("list %s: %w", ref, err)
	}
	s.observe(ref, ls.infos)
	return ls, nil
}

// isMarkName reports whether rel, a key relative to its session, has the layout of a
// deletion mark: markDir, a level element, and one name ending in markExt.
func isMarkName(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 3 && parts[0] == markDir && isLayoutName(parts[1]) && parts[1] != markDir &&
		strings.HasSuffix(parts[2], markExt)
}

// readMarks reads the deletion marks at keys. A mark that is not valid JSON, or does
// not name the segment its key stands for, is ignored, never trusted; inputs outside
// the session are dropped from it.
func (s *Store) readMarks(ctx context.Context, ref TranscriptRef, keys []bucket.ObjectInfo) ([]deletionMark, error) {
	var marks []deletionMark
	for _, oi := range keys {
		m, err := s.readMark(ctx, oi)
		if errors.Is(err, ErrNotFound) {
			continue // another job collected it meanwhile
		}
		if err != nil {
			return nil, err
		}
		if m.SupersededBy == "" {
			continue
		}
		m.SupersededBy = s.sessionKey(ref, m.SupersededBy)
		if s.markKey(ref, m.SupersededBy) != oi.Key {
			continue
		}
		inputs := m.Inputs[:0]
		for _, k := range m.Inputs {
			k = s.sessionKey(ref, k)
			if info, err := ParseKey(s.cfg.Prefix, k); err == nil && info.Ref == ref && k != m.SupersededBy {
				inputs = append(inputs, k)
			}
		}
		m.Inputs = inputs
		marks = append(marks, m)
	}
	return marks, nil
}

func (s *Store) readMark(ctx context.Context, oi bucket.ObjectInfo) (deletionMark, error) {
	rc, got, err := s.cfg.Bucket.Get(ctx, oi.Key)
	if err != nil {
		return deletionMark{}, fmt.Errorf("read deletion mark %s: %w", oi.Key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	if err != nil {
		return deletionMark{}, fmt.Errorf("read deletion mark %s: %w", oi.Key, err)
	}
	var m deletionMark
	if err := json.Unmarshal(data, &m); err != nil {
		return deletionMark{}, nil // not ours: ignored, never trusted
	}
	// The age is the bucket's: the listing's ModTime of the mark object, or (when the
	// caller has none) the one the GET reports. The time written inside is ignored.
	m.MarkedAt = oi.ModTime
	if m.MarkedAt.IsZero() {
		m.MarkedAt = got.ModTime
	}
	m.key = oi.Key
	return m, nil
}

// putMark stores the deletion mark of inputs, superseded by out. A mark for out
// already there (another job's) is kept as it is, with its own age.
func (s *Store) putMark(ctx context.Context, ref TranscriptRef, out string, inputs []string) (deletionMark, error) {
	m := deletionMark{SupersededBy: out, Inputs: inputs, MarkedAt: s.cfg.Now().UTC(), key: s.markKey(ref, out), fresh: true}
	// Stored relative to the session, like a segment's inputs (see sessionRelKey).
	stored := deletionMark{SupersededBy: sessionRelKey(out), MarkedAt: m.MarkedAt}
	for _, k := range inputs {
		stored.Inputs = append(stored.Inputs, sessionRelKey(k))
	}
	data, err := json.Marshal(stored)
	if err != nil {
		return m, err
	}
	data = append(data, '\n')
	err = s.cfg.Bucket.Put(ctx, m.key, bytes.NewReader(data), int64(len(data)),
		bucket.PutOptions{Checksum: ObjectChecksum(data), ContentType: "application/json"})
	if errors.Is(err, bucket.ErrExists) {
		old, rerr := s.readMark(ctx, bucket.ObjectInfo{Key: m.key})
		if rerr == nil && s.sessionKey(ref, old.SupersededBy) == out {
			m.MarkedAt, m.fresh = old.MarkedAt, false
			return m, nil
		}
		return m, fmt.Errorf("mark inputs of %s: %w", out, errors.Join(err, rerr))
	}
	if err != nil {
		return m, fmt.Errorf("mark inputs of %s: %w", out, err)
	}
	return m, nil
}

// collect deletes the marked segments whose delay has passed on the bucket's clock
// (now) and that a present segment still supersedes and holds, then the marks that
// have nothing left to wait for. A marked segment that nothing present supersedes any
// more is kept; so is one whose superseder lacks one of its entries (checked here,
// before the delete, however the mark came to be): collect then returns an error
// wrapping ErrCompactInput naming both segments, after doing the rest of its work.
func (s *Store) collect(ctx context.Context, st *compactState, marks []deletionMark, now time.Time, opts CompactOptions, res *CompactResult) error {
	// Oldest marks first, so inputs go before the outputs that replaced them.
	slices.SortFunc(marks, func(a, b deletionMark) int {
		if c := a.MarkedAt.Compare(b.MarkedAt); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	counted := map[string]bool{}
	var unverified []error
	for _, m := range marks {
		waiting := false
		var due []string
		for _, k := range m.Inputs {
			_, present := st.present[k]
			out, superseded := st.supersededBy(k)
			_, outPresent := st.present[out]
			switch {
			case !present || counted[k]:
			case !superseded || !outPresent:
				res.StaleMarks++
			case opts.DeleteDelay > 0 && (m.fresh || now.Sub(m.MarkedAt) < opts.DeleteDelay):
				res.Pending++
				waiting = true
			default:
				due = append(due, k)
			}
			counted[k] = true
		}
		verified, err := s.verifiedDue(ctx, st, due)
		if err != nil && !errors.Is(err, ErrCompactInput) {
			return err
		}
		if err != nil {
			unverified = append(unverified, err)
			res.Unverified += len(due) - len(verified)
			waiting = true // the mark stays: it is the operator's lead
		}
		due = verified
		res.Deleted += len(due)
		if opts.DryRun {
			continue
		}
		if err := s.deleteKeys(ctx, due); err != nil {
			return fmt.Errorf("delete superseded segments: %w", err)
		}
		for _, k := range due {
			delete(st.present, k)
		}
		if !waiting {
			if err := s.cfg.Bucket.Delete(ctx, m.key); err != nil {
				return fmt.Errorf("delete deletion mark %s: %w", m.key, err)
			}
		}
	}
	return errors.Join(unverified...)
}

// verifiedDue reads the segments at keys (each superseded by a present segment) and
// returns those whose superseder holds every one of their entries byte for byte. A
// segment that fails the check, or fails verification itself, is left out and
// reported in an error wrapping ErrCompactInput; other errors stop the check.
func (s *Store) verifiedDue(ctx context.Context, st *compactState, keys []string) ([]string, error) {
	var need []SegmentInfo
	for _, k := range keys {
		if st.segs[k] == nil {
			need = append(need, st.present[k])
		}
	}
	segs, corrupt, err := s.fetchAll(ctx, need, true)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, in := range need {
		st.segs[in.Key] = segs[i]
	}
	for _, c := range corrupt {
		errs = append(errs, fmt.Errorf("%w: %w", ErrCompactInput, c.Err))
	}
	ok := keys[:0:0]
	for _, k := range keys {
		if st.segs[k] == nil {
			continue // corrupt, reported above
		}
		out, _ := st.supersededBy(k)
		if err := s.checkContained(st, st.present[k], out); err != nil {
			errs = append(errs, err)
			continue
		}
		ok = append(ok, k)
	}
	return ok, errors.Join(errs...)
}

// deleteKeys deletes keys: with DeleteObjects requests of up to
// bucket.MaxBatchDelete keys where the bucket has them, else one DELETE per key,
// ReadConcurrency at a time.
func (s *Store) deleteKeys(ctx context.Context, keys []string) error {
	if bd, ok := s.cfg.Bucket.(bucket.BatchDeleter); ok {
		for len(keys) > 0 {
			n := min(len(keys), bucket.MaxBatchDelete)
			if err := bd.DeleteBatch(ctx, keys[:n]); err != nil {
				return err
			}
			keys = keys[n:]
		}
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.ReadConcurrency)
	for _, k := range keys {
		g.Go(func() error {
			if err := s.cfg.Bucket.Delete(gctx, k); err != nil {
				return fmt.Errorf("delete %s: %w", k, err)
			}
			return nil
		})
	}
	return g.Wait()
}
