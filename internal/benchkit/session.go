package benchkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/transcript"
)

// LinearBatch is the most entries WriteLinearSession appends as one segment.
const LinearBatch = 100_000

// ErrNegativeCount is the error of WriteLinearSession for a negative n, and of
// WriteLinearSessionBatched for a batch below 1.
var ErrNegativeCount = errors.New("benchkit: negative entry count")

// WriteLinearSession writes session ref to s as writer "bench": a header and n
// message entries of about 130 bytes each (13 MiB of JSONL for 100,000), one
// chain, appended LinearBatch entries at a time (the header counts in the
// first): the shape of a long compacted session. It returns the session's size
// as JSONL, every entry and its newline.
func WriteLinearSession(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, n int) (int64, error) {
	return writeLinear(ctx, s, ref, n, LinearBatch)
}

// WriteLinearSessionBatched is WriteLinearSession appending batch entries at a
// time (batch > 0), for a caller that needs the session in several segments.
func WriteLinearSessionBatched(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, n, batch int) (int64, error) {
	if batch <= 0 {
		return 0, fmt.Errorf("%w: batch of %d", ErrNegativeCount, batch)
	}
	return writeLinear(ctx, s, ref, n, batch)
}

// writeLinear is WriteLinearSession appending batchSize entries at a time.
func writeLinear(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, n, batchSize int) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("%w: %d", ErrNegativeCount, n)
	}
	w, err := transcript.NewWriter("bench")
	if err != nil {
		return 0, err
	}
	sid, err := json.Marshal(ref.SessionID)
	if err != nil {
		return 0, err
	}
	batch := [][]byte{fmt.Appendf(nil, `{"type":"session","version":3,"id":%s,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`, sid)}
	size := int64(len(batch[0]) + 1)
	flush := func(at int) error {
		if _, err := s.AppendSegments(ctx, ref, batch, w); err != nil {
			return fmt.Errorf("linear session %s, entries before %d: %w", ref.SessionID, at, err)
		}
		batch = batch[:0]
		return nil
	}
	parent := "null"
	for i := range n {
		id := fmt.Sprintf("%08x", uint32(i+1)*2654435761)
		raw := fmt.Appendf(nil, `{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"m%d"}}`, id, parent, i)
		parent = `"` + id + `"`
		batch = append(batch, raw)
		size += int64(len(raw) + 1)
		if len(batch) == batchSize {
			if err := flush(i + 1); err != nil {
				return 0, err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(n); err != nil {
			return 0, err
		}
	}
	return size, nil
}
