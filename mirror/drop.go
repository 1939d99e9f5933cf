package mirror

import (
	"github.com/transcriptstore/transcript/transcript"
)

// DropQueued takes back ref's segments that wait in the outbox for a worker
// (accepted, and not being uploaded), and returns how many it took back:
// each leaves the outbox as if uploaded (its journal record is marked done,
// its file under pending/ removed), and AwaitQuiescence counts it as done.
// A segment of ref in flight is not taken back, nor are segments held back
// behind a quarantined one (they are in the quarantine).
//
// It is for an uploader that hands the same entries over again right after,
// whole: a follower refilling a session its store lost uploads the session's
// file from its start, and the segments it accepted before would otherwise
// land first, putting the file's later lines ahead of its header in the
// store's order. The caller must make sure, before it calls DropQueued, that
// a crash before the entries are accepted again hands them over again (the
// marks of the records taken back are not fsynced: after a machine crash
// they may be uploaded after all, a copy readers collapse).
func (m *Mirror) DropQueued(ref transcript.TranscriptRef) int {
	name := ref.Norm().String()
	m.mu.Lock()
	defer m.mu.Unlock()
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
	return dropped
}
