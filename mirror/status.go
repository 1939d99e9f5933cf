package mirror

import (
	"time"
)

// Status is a snapshot of a Mirror for operators.
type Status struct {
	// Pending is the number of segments accepted but not yet confirmed by the store
	// (queued, in flight or waiting to retry); PendingBytes is their total size.
	Pending      int
	PendingBytes int64
	// OldestPending is the age of the oldest pending segment (0 when none). A
	// growing value means uploads are stuck.
	OldestPending time.Duration
	// Uploaded and UploadedBytes count the segments the store confirmed since New.
	Uploaded      uint64
	UploadedBytes uint64
	// Failures counts failed upload attempts, transient or permanent.
	Failures uint64
	// Retries counts upload attempts made after a transient failure.
	Retries uint64
	// Quarantined is the number of segments in the outbox quarantine (rejected by
	// the store for good), including those left by earlier processes.
	Quarantined int
	// LastError is the message of the most recent failed attempt ("" if none), at
	// LastErrorTime.
	LastError     string
	LastErrorTime time.Time
	// Stuck lists the sessions whose uploads are held back, in name order: the
	// store refused one of their segments or batches for good. Other sessions
	// keep uploading. See Mirror.Release.
	Stuck []StuckSession
	// JournalRecords counts the segments Upload appended to the outbox journal
	// since New, and JournalSyncs the fsyncs the journal made (of its files,
	// shared by concurrent Uploads, and of its directory when a file starts):
	// JournalRecords / JournalSyncs is how many flushes an fsync covered.
	JournalRecords uint64
	JournalSyncs   uint64
}

// counters are the cumulative figures of Status, guarded by Mirror.mu.
type counters struct {
	uploaded      uint64
	uploadedBytes uint64
	failures      uint64
	retries       uint64
	quarantined   int
	lastError     string
	lastErrorTime time.Time
}

// Status returns a snapshot of the Mirror's state and counters.
func (m *Mirror) Status() Status {
	// The journal's lock is never taken inside m.mu's, nor the other way round.
	records, syncs := m.journal.counts()
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{
		JournalRecords: records,
		JournalSyncs:   syncs,
		Pending:        len(m.pending),
		PendingBytes:   m.bytes,
		Uploaded:       m.stats.uploaded,
		UploadedBytes:  m.stats.uploadedBytes,
		Failures:       m.stats.failures,
		Retries:        m.stats.retries,
		Quarantined:    m.stats.quarantined,
		LastError:      m.stats.lastError,
		LastErrorTime:  m.stats.lastErrorTime,
		Stuck:          m.stuckSnapshot(),
	}
	var oldest time.Time
	for j := range m.pending {
		if oldest.IsZero() || j.enqueued.Before(oldest) {
			oldest = j.enqueued
		}
	}
	if !oldest.IsZero() {
		st.OldestPending = max(time.Since(oldest), 0)
	}
	return st
}

func (m *Mirror) countUpload(size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.uploaded++
	m.stats.uploadedBytes += uint64(size)
}

func (m *Mirror) countRetry() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.retries++
}

func (m *Mirror) countFailure(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.failures++
	m.stats.lastError = err.Error()
	m.stats.lastErrorTime = time.Now()
}
