package transcript

import (
	"fmt"
	"time"
)

// Compaction is one merge of a level's segments into the next level: one segment,
// or a group of parts when the merged entries exceed the target segment size.
type Compaction struct {
	// Level is the level of the inputs (the highest of them, in a full
	// compaction); the output is Level+1.
	Level int
	// Inputs are the merged segments, in key order.
	Inputs []SegmentInfo
	// Output is the written segment, or the first part of the written group (zero
	// in a dry run).
	Output SegmentInfo
	// Outputs lists every written segment: Output alone, or the group's parts in
	// part order (nil in a dry run).
	Outputs []SegmentInfo
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
	// Marked counts inputs scheduled for deletion (this run's inputs and inputs of
	// an earlier run that stopped before marking them); with a delete delay each
	// compaction's are recorded in one mark object, without one they are deleted in
	// the same run and no mark object is written.
	Marked int
	// Deleted counts superseded segments deleted because their mark was due.
	Deleted int
	// Pending counts marked segments whose delete delay has not passed, or
	// whose superseding output, stored by another run, is not a minute old yet.
	//
	// In a dry run, Marked, Deleted and Pending count what the run would do:
	// the marks it finds, and the inputs of the compactions it plans.
	Pending int
	// Contended reports that the session kept changing under this run (another
	// compaction deleted what it had listed, Config.MaxRelists+1 times): it stopped
	// and left the session to the other job.
	Contended bool
	// SkippedRecent reports a session left alone for CompactOptions.OlderThan.
	SkippedRecent bool
	// Skipped, when not empty, says why Compact left a strict session (or its
	// levels from some level up) as it was: SkipCommitOrder or SkipHeadMoved; or
	// any session: SkipSessionDeleted, SkipTopLevel.
	Skipped string
	// Uncommitted counts segments of a strict session deleted because its head
	// does not commit them and they are CompactOptions.UncommittedAge old: the
	// segments of appends that lost a head race or never wrote their head, and
	// outputs of compactions that lost the race for the head.
	Uncommitted int
	// StaleMarks counts marked segments kept because nothing present supersedes them
	// any more (their mark is removed).
	StaleMarks int
	// Unverified counts marked segments kept because the segment that claims to
	// supersede them lacks some of their entries (a forged or damaged superseder;
	// Compact then returns an error wrapping ErrCompactInput naming both).
	Unverified int
}

// countPlanned adds to a dry run's counts what the run it previews does with
// the inputs of the compactions it plans: the run marks every one, and deletes
// them at once (delay, the options' normalized DeleteDelay, is 0) or leaves them
// waiting for their delay. Without it a dry run counts only the marks it found,
// and says "0 marked, 0 deleted" of a run that then marks and deletes hundreds.
func (r *CompactResult) countPlanned(delay time.Duration) {
	planned := r.SegmentsIn()
	r.Marked += planned
	if delay > 0 {
		r.Pending += planned
	} else {
		r.Deleted += planned
	}
}

// SegmentsIn returns how many segments were merged; SegmentsOut how many were written.
func (r *CompactResult) SegmentsIn() int {
	n := 0
	for _, c := range r.Compactions {
		n += len(c.Inputs)
	}
	return n
}

// SegmentsOut returns how many compacted segments were written (in a dry run: how
// many compactions were planned).
func (r *CompactResult) SegmentsOut() int {
	n := 0
	for _, c := range r.Compactions {
		n += max(len(c.Outputs), 1)
	}
	return n
}

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
