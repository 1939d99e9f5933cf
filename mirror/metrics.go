package mirror

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names exported by Collector.
const (
	MetricPendingSegments      = "transcript_mirror_pending_segments"
	MetricPendingBytes         = "transcript_mirror_pending_bytes"
	MetricOldestPendingSeconds = "transcript_mirror_oldest_pending_seconds"
	MetricUploadedSegments     = "transcript_mirror_uploaded_segments_total"
	MetricUploadedBytes        = "transcript_mirror_uploaded_bytes_total"
	MetricUploadFailures       = "transcript_mirror_upload_failures_total"
	MetricUploadRetries        = "transcript_mirror_upload_retries_total"
	MetricQuarantinedSegments  = "transcript_mirror_quarantined_segments"
	MetricLastErrorTimestamp   = "transcript_mirror_last_error_timestamp_seconds"
	MetricStuckSessions        = "transcript_mirror_stuck_sessions"
	// MetricStuckSessionEntries has one series per stuck session, labelled with
	// the session and the error, whose value is the number of entries held back.
	MetricStuckSessionEntries = "transcript_mirror_stuck_session_entries"
	// MetricJournalRecords and MetricJournalSyncs count the segments appended to
	// the outbox journal and the journal's fsyncs: their rates' ratio is how
	// many flushes one fsync covers.
	MetricJournalRecords = "transcript_mirror_journal_records_total"
	MetricJournalSyncs   = "transcript_mirror_journal_fsyncs_total"
)

// collector exports a Mirror's Status as Prometheus metrics, computed at scrape time.
type collector struct {
	m                                          *Mirror
	pending, pendingBytes, oldest              *prometheus.Desc
	uploaded, uploadedBytes, failures, retries *prometheus.Desc
	quarantined, lastError                     *prometheus.Desc
	stuck, stuckEntries                        *prometheus.Desc
	journalRecords, journalSyncs               *prometheus.Desc
}

// Collector returns a Prometheus collector of the Mirror's Status, with
// Config.MetricLabels as constant labels. Register it with a registry of your choice
// (prometheus.MustRegister(m.Collector())); the Mirror registers nothing itself. Give
// each Mirror of a process distinct MetricLabels if you register several in one
// registry.
func (m *Mirror) Collector() prometheus.Collector {
	l := m.cfg.MetricLabels
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, l) }
	return &collector{
		m:              m,
		pending:        d(MetricPendingSegments, "Segments accepted by the mirror and not yet confirmed by the store."),
		pendingBytes:   d(MetricPendingBytes, "Total size of the pending segments, in bytes."),
		oldest:         d(MetricOldestPendingSeconds, "Age of the oldest pending segment, in seconds (0 when none)."),
		uploaded:       d(MetricUploadedSegments, "Segments uploaded and confirmed by the store."),
		uploadedBytes:  d(MetricUploadedBytes, "Bytes of the segments uploaded and confirmed by the store."),
		failures:       d(MetricUploadFailures, "Failed upload attempts, transient or permanent."),
		retries:        d(MetricUploadRetries, "Upload attempts made after a transient failure."),
		quarantined:    d(MetricQuarantinedSegments, "Segments in the outbox quarantine, rejected by the store for good."),
		lastError:      d(MetricLastErrorTimestamp, "Unix time of the last failed upload attempt (0 if none)."),
		stuck:          d(MetricStuckSessions, "Sessions whose uploads are held back after the store refused a segment or batch for good."),
		journalRecords: d(MetricJournalRecords, "Segments appended to the outbox journal (one per flush handed over)."),
		journalSyncs:   d(MetricJournalSyncs, "Fsyncs of the outbox journal's files and directory (concurrent flushes share one)."),
		stuckEntries: prometheus.NewDesc(MetricStuckSessionEntries,
			"Entries held back per stuck session, with the error that stopped it.", []string{"session", "error"}, l),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pending, c.pendingBytes, c.oldest, c.uploaded, c.uploadedBytes,
		c.failures, c.retries, c.quarantined, c.lastError, c.stuck, c.stuckEntries,
		c.journalRecords, c.journalSyncs} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.m.Status()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	k := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	g(c.pending, float64(st.Pending))
	g(c.pendingBytes, float64(st.PendingBytes))
	g(c.oldest, st.OldestPending.Seconds())
	k(c.uploaded, float64(st.Uploaded))
	k(c.uploadedBytes, float64(st.UploadedBytes))
	k(c.failures, float64(st.Failures))
	k(c.retries, float64(st.Retries))
	g(c.quarantined, float64(st.Quarantined))
	var last float64
	if !st.LastErrorTime.IsZero() {
		last = float64(st.LastErrorTime.UnixNano()) / 1e9
	}
	g(c.lastError, last)
	g(c.stuck, float64(len(st.Stuck)))
	k(c.journalRecords, float64(st.JournalRecords))
	k(c.journalSyncs, float64(st.JournalSyncs))
	for _, s := range st.Stuck {
		ch <- prometheus.MustNewConstMetric(c.stuckEntries, prometheus.GaugeValue, float64(s.Entries), s.Session, shortError(s.Error))
	}
}

// shortError bounds an error message used as a label value.
func shortError(msg string) string {
	const limit = 200
	if len(msg) > limit {
		return msg[:limit] + "..."
	}
	return msg
}
