package transcript

import (
	"context"
	"fmt"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
)

// SplitBatch cuts entries, in order, into runs whose segments stay within maxBytes
// of JSONL (each entry and its newline); maxBytes <= 0 means
// segment.DefaultTargetSegmentSize. An entry larger than maxBytes gets a run of its
// own (the encoder then refuses it, naming the limit). The runs share entries'
// backing arrays.
func SplitBatch(entries [][]byte, maxBytes int64) [][][]byte {
	if maxBytes <= 0 {
		maxBytes = segment.DefaultTargetSegmentSize
	}
	var runs [][][]byte
	start, size := 0, int64(0)
	for i, e := range entries {
		n := int64(len(e)) + 1
		if i > start && size+n > maxBytes {
			runs = append(runs, entries[start:i:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(entries) {
		runs = append(runs, entries[start:])
	}
	return runs
}

// PrepareSegments validates and encodes entries as one or more level-0 segments of
// ref, in order, each within segment.DefaultTargetSegmentSize, so that a batch of any
// size can be stored. Nothing is written; an entry the store cannot hold fails the
// whole batch.
func (s *Store) PrepareSegments(ref TranscriptRef, entries [][]byte, w *Writer) ([]SegmentObject, error) {
	return s.prepareRuns(ref, entries, nil, w)
}

// PrepareParsed is PrepareSegments for a caller that has already parsed each
// entry by the rule of ParseEntry, as AppendParsed is AppendSegment's: the
// segments' metadata is made of links (links[i] what the caller read of
// entries[i]) instead of a second parse of each entry. A caller that did not
// read them from the entries by that rule must use PrepareSegments.
func (s *Store) PrepareParsed(ref TranscriptRef, entries [][]byte, links []pi.Links, w *Writer) ([]SegmentObject, error) {
	if len(links) != len(entries) {
		return nil, fmt.Errorf("prepare segments: %d links for %d entries", len(links), len(entries))
	}
	return s.prepareRuns(ref, entries, links, w)
}

// prepareRuns is PrepareSegments; links, when not nil, as in prepareLevel0.
func (s *Store) prepareRuns(ref TranscriptRef, entries [][]byte, links []pi.Links, w *Writer) ([]SegmentObject, error) {
	if len(entries) == 0 {
		return nil, ErrEmptySegment
	}
	runs := SplitBatch(entries, s.segmentTarget)
	objs := make([]SegmentObject, 0, len(runs))
	start := 0
	for _, run := range runs {
		var runLinks []pi.Links
		if links != nil {
			runLinks = links[start : start+len(run)]
		}
		start += len(run)
		obj, err := s.prepareLevel0(ref, run, runLinks, w)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// AppendSegments writes entries as one or more new segments of ref (see
// PrepareSegments), in order, and returns their descriptions. Every segment is
// checked before the first is stored, so a refused entry writes nothing. If a
// write fails, the segments before it are stored; writing the same entries again
// is harmless, as readers collapse identical duplicates. A segment whose entries
// hold payloads of at least Config.PayloadThreshold bytes is stored as
// AppendSegment stores one: its payloads are compressed once, as payload
// objects, and the segment of references after them; not compressed whole first
// and then taken apart again (PutSegment's way with a segment encoded already).
func (s *Store) AppendSegments(ctx context.Context, ref TranscriptRef, entries [][]byte, w *Writer) ([]SegmentInfo, error) {
	if len(entries) == 0 {
		return nil, ErrEmptySegment
	}
	// One step per run: an encoded segment (obj), or one whose payloads go out
	// first (x, when extract is set).
	type step struct {
		obj     SegmentObject
		x       extractedSegment
		extract bool
	}
	runs := SplitBatch(entries, s.segmentTarget)
	steps := make([]step, len(runs))
	threshold := s.payloadThreshold()
	for i, run := range runs {
		var fs []found
		if threshold > 0 {
			fs = findPayloads(run, threshold)
		}
		var err error
		if len(fs) > 0 {
			steps[i].x, err = s.prepareExtracted(ref, run, fs, w)
			steps[i].extract = true
		} else {
			steps[i].obj, err = s.PrepareSegment(ref, run, w)
		}
		if err != nil {
			return nil, err
		}
	}
	infos := make([]SegmentInfo, 0, len(steps))
	for i, st := range steps {
		var info SegmentInfo
		var err error
		if st.extract {
			info, err = s.putPrepared(ctx, st.x, w)
		} else {
			// No payload to take out (findPayloads above): PutSegment would
			// decode the segment again to find none.
			info, err = st.obj.Info, s.putObject(ctx, st.obj.Info.Key, st.obj.Data)
		}
		if err != nil {
			return infos, fmt.Errorf("segment %d of %d: %w", i+1, len(steps), err)
		}
		infos = append(infos, info)
	}
	return infos, nil
}
