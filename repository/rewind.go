package repository

import (
	"context"
	"fmt"
	"slices"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ContextAt rewinds the session to entry entryID: it returns the entries as they
// stood when that entry was the newest (the merge order up to and including it,
// which is what an exported session file truncated after that entry's line holds)
// and the model context built from them exactly as Pi builds it from such a file
// (at its active leaf: entryID, or a leaf entry's target). An unknown id gives an
// error wrapping bucket.ErrNotFound.
func (s *Session) ContextAt(ctx context.Context, entryID string) (pi.Context, []pi.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(ctx); err != nil {
		return pi.Context{}, nil, err
	}
	i := slices.IndexFunc(s.entries, func(e pi.Entry) bool { return e.ID() == entryID })
	if i < 0 {
		return pi.Context{}, nil, fmt.Errorf("session %q: entry %q: %w", s.id, entryID, bucket.ErrNotFound)
	}
	entries := slices.Clone(s.entries[:i+1])
	return pi.BuildContextFrom(entries, nil), entries, nil
}
