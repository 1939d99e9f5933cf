package mirror

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// JournalRecord is one record of an outbox journal, as tests see it.
type JournalRecord struct {
	File string // path of the journal file
	Key  string
	Data []byte
	End  int // offset just past the record in File
}

// ReadJournal returns the replayable records of the journal of the outbox dir, in
// append order, without changing anything.
func ReadJournal(dir string) ([]JournalRecord, error) {
	ents, err := os.ReadDir(filepath.Join(dir, outboxJournal))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), journalExt) {
			names = append(names, filepath.Join(dir, outboxJournal, e.Name()))
		}
	}
	slices.Sort(names) // zero-padded sequence numbers: name order is append order
	var out []JournalRecord
	for _, p := range names {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for off := 0; off < len(data); {
			key, seg, n, err := decodeRecord(data[off:])
			if err != nil {
				break
			}
			off += n
			out = append(out, JournalRecord{File: p, Key: key, Data: seg, End: off})
		}
	}
	return out, nil
}

// JournalArriving returns how many appends m's outbox journal was told to
// expect (see journal.expect) that were neither made nor withdrawn: zero
// whenever no Upload runs.
func JournalArriving(m *Mirror) int {
	m.journal.mu.Lock()
	defer m.journal.mu.Unlock()
	return m.journal.arriving
}

// SetJournalStraggleWait sets how long a leader of m's journal waits for
// announced appends before it fsyncs.
func SetJournalStraggleWait(m *Mirror, d time.Duration) {
	m.journal.mu.Lock()
	defer m.journal.mu.Unlock()
	m.journal.straggleWait = d
}

// AppendJournal appends a record to m's outbox journal as an Upload of no
// segment would, and returns once it is durable.
func AppendJournal(m *Mirror, key string, data []byte) error {
	_, _, err := m.journal.append(key, data)
	return err
}
