package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// markDir is the element under a session's prefix that holds deletion marks. Mark keys
// have more elements than segment keys, so listings of segments skip them.
const markDir = "gc"

// markExt ends every deletion mark key.
const markExt = ".mark.json"

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
	// unstored marks a schedule with no mark object (see scheduleDelete): collect
	// stores it only if it must keep one of the inputs.
	unstored bool
	// own marks the schedule of a compaction this run stored and kept (see
	// dropIfInputsGone): its inputs need not wait for the output to settle.
	own bool
}

// markKey returns the key of the deletion mark of the inputs of the compacted
// segment out, in session ref.
func (s *Store) markKey(ref TranscriptRef, out string) string {
	sp := sessionPrefix(s.cfg.Prefix, ref)
	rel := strings.TrimSuffix(strings.TrimPrefix(out, sp), SegmentExt)
	return sp + markDir + "/" + rel + markExt
}

// isMarkName reports whether rel, a key relative to its session, has the layout of a
// deletion mark: markDir, a level element, and one name ending in markExt.
func isMarkName(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) == 3 && parts[0] == markDir && isLevelOrMark(parts[1]) && parts[1] != markDir &&
		strings.HasSuffix(parts[2], markExt)
}

// readMarks reads the deletion marks at keys. A mark that is not valid JSON, or does
// not name the segment its key stands for, is ignored, never trusted; inputs outside
// the session are dropped from it.
func (s *Store) readMarks(ctx context.Context, ref TranscriptRef, keys []bucket.ObjectInfo) ([]deletionMark, error) {
	var marks []deletionMark
	for _, oi := range keys {
		m, ok, err := s.markAt(ctx, ref, oi)
		if errors.Is(err, bucket.ErrNotFound) {
			continue // another job collected it meanwhile
		}
		if err != nil {
			return nil, err
		}
		if ok {
			marks = append(marks, m)
		}
	}
	return marks, nil
}

// markAt reads the deletion mark at oi, listed under ref. ok is false for a
// mark that is ignored: not valid JSON, or not naming the segment its key
// stands for. A mark gone since it was listed (another job collected it) is an
// error wrapping bucket.ErrNotFound. Inputs outside the session are dropped
// from it.
func (s *Store) markAt(ctx context.Context, ref TranscriptRef, oi bucket.ObjectInfo) (deletionMark, bool, error) {
	m, err := s.readMark(ctx, oi)
	if err != nil || m.SupersededBy == "" {
		return deletionMark{}, false, err
	}
	m.SupersededBy = s.sessionKey(ref, m.SupersededBy)
	if s.markKey(ref, m.SupersededBy) != oi.Key {
		return deletionMark{}, false, nil
	}
	inputs := m.Inputs[:0]
	for _, k := range m.Inputs {
		k = s.sessionKey(ref, k)
		if info, err := ParseKey(s.cfg.Prefix, k); err == nil && info.Ref == ref && k != m.SupersededBy {
			inputs = append(inputs, k)
		}
	}
	m.Inputs = inputs
	return m, true, nil
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

// scheduleDelete schedules the deletion of inputs, superseded by out. With a delete
// delay it stores their mark (putMark). Without one, collect deletes them in this
// same run, so the mark object would be written and deleted again at once: the
// schedule stays in memory, and collect stores it only if an input must be kept
// (its superseder lacks an entry of it). Nothing is lost by a crash before the
// deletes: the next run finds the inputs superseded and unmarked and schedules them
// again, after the same containment check.
func (s *Store) scheduleDelete(ctx context.Context, ref TranscriptRef, out string, inputs []string, opts CompactOptions) (deletionMark, error) {
	if opts.DeleteDelay > 0 {
		return s.putMark(ctx, ref, out, inputs)
	}
	return deletionMark{SupersededBy: out, Inputs: inputs, MarkedAt: s.cfg.Now().UTC(), key: s.markKey(ref, out),
		fresh: true, unstored: true}, nil
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
			switch {
			case !present || counted[k]:
			case !superseded || !st.wholeNow(out):
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
		// An input of another run's output, which its writer may still drop
		// (outputSettle), is checked against it above and stays, marked,
		// until the output settles.
		due = verified[:0:0]
		for _, k := range verified {
			if st.waitsForOutput(m, k, now) {
				res.Pending++
				waiting = true
				continue
			}
			due = append(due, k)
		}
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
		switch {
		case m.unstored && waiting:
			// Kept inputs keep their mark: it is the operator's lead.
			if _, err := s.putMark(ctx, st.ref, m.SupersededBy, m.Inputs); err != nil {
				return err
			}
		case m.unstored:
		case !waiting:
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
		if err := s.checkContained(ctx, st, st.present[k], out); err != nil {
			if !errors.Is(err, ErrCompactInput) {
				return nil, err
			}
			errs = append(errs, err)
			continue
		}
		ok = append(ok, k)
	}
	return ok, errors.Join(errs...)
}

// deleteKeys deletes keys with DeleteBatch calls of up to bucket.MaxBatchDelete
// keys each: one DeleteObjects request per call on S3.
func (s *Store) deleteKeys(ctx context.Context, keys []string) error {
	return bucket.DeleteInBatches(ctx, s.cfg.Bucket, keys)
}
