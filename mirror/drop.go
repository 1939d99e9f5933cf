package mirror

import (
	"context"
	"fmt"

	"github.com/transcriptstore/transcript/transcript"
)

// DropQueued takes back ref's segments that the store does not have yet,
// and returns how many it took back: each leaves the outbox as if uploaded
// (its journal record is marked done, its file under pending/ removed), and
// AwaitQuiescence counts it as done. A segment of ref in flight is taken
// back too unless its PUT succeeds: its upload's context is cancelled and
// DropQueued waits for it to end (or for ctx to end: the error then wraps
// ctx.Err(), and that segment may still land). Segments held back behind a
// quarantined one are in the quarantine, and stay there.
//
// It is for an uploader that hands the same entries over again right after,
// whole: a follower refilling a session its store lost uploads the session's
// file from its start, and the segments it accepted before would otherwise
// land first, putting the file's later lines ahead of its header in the
// store's order. The caller must make sure, before it calls DropQueued, that
// a crash before the entries are accepted again hands them over again (the
// marks of the records taken back are not fsynced: after a machine crash
// they may be uploaded after all, a copy readers collapse).
func (m *Mirror) DropQueued(ctx context.Context, ref transcript.TranscriptRef) (int, error) {
	name := ref.Norm().String()
	m.mu.Lock()
	dropped := 0
	kept := m.queue[:0]
	for _, j := range m.queue {
		if transcript.SessionNameOfKey(j.key) != name {
			kept = append(kept, j)
			continue
		}
		if j.jf == nil { // a file under pending/; a journal record is released by finishLocked
			if err := m.box.remove(j.key); err != nil {
				kept = append(kept, j) // still there: it is uploaded after all
				continue
			}
		}
		m.finishLocked(j)
		dropped++
	}
	clear(m.queue[len(kept):])
	m.queue = kept
	// What is left of ref and written is in flight.
	var flying []*job
	for j := range m.pending {
		if j.written && transcript.SessionNameOfKey(j.key) == name {
			j.drop = true
			if j.cancel != nil {
				j.cancel()
			}
			flying = append(flying, j)
		}
	}
	m.mu.Unlock()
	for _, j := range flying {
		select {
		case <-j.done:
		case <-ctx.Done():
			return dropped, fmt.Errorf("mirror: take back the segments of %s: %w (one is still in flight)", ref, ctx.Err())
		}
		m.mu.Lock()
		if j.dropped {
			dropped++
		}
		m.mu.Unlock()
	}
	return dropped, nil
}
