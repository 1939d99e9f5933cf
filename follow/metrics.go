package follow

import (
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Status is a snapshot of a Follower, as of its last read or rescan.
type Status struct {
	// Following counts the session files followed; Legacy those waiting for Pi
	// to migrate them; Ignored the files that are not Pi session files; Waiting
	// the files whose first line is not complete yet.
	Following, Legacy, Ignored, Waiting int
	// LagBytes is the bytes the followed files hold past what was handed over
	// (an unterminated last line included); LagSeconds how long the oldest of
	// them has been waiting.
	LagBytes   int64
	LagSeconds float64
	// Stuck lists the files that cannot be followed, or have ended in an
	// unterminated line or failed for Config.StuckAfter, by path.
	Stuck []StuckFile
	// The counters since New: complete lines read, entries handed over,
	// segments (batches) handed over, their bytes, lines recognised as stored
	// already, lines skipped as malformed, conflicts, and read, upload or state
	// errors.
	Lines, Entries, Segments, Bytes, Stored, Malformed, Conflicts, Errors uint64
}

// StuckFile is a file that does not advance.
type StuckFile struct {
	File   string // relative to the root
	Reason string
}

// stats are the counters and the last snapshot, guarded by Follower.mu.
type stats struct {
	st Status
}

func (f *Follower) count(b *batch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.st.Lines += uint64(b.lines)
	f.stats.st.Stored += uint64(b.stored)
	if len(b.entries) > 0 {
		f.stats.st.Entries += uint64(len(b.entries))
		f.stats.st.Segments++
		f.stats.st.Bytes += uint64(b.bytes)
	}
}

func (f *Follower) countMalformed() { f.add(&f.stats.st.Malformed) }
func (f *Follower) countConflict()  { f.add(&f.stats.st.Conflicts) }
func (f *Follower) countError()     { f.add(&f.stats.st.Errors) }

func (f *Follower) add(c *uint64) {
	f.mu.Lock()
	*c++
	f.mu.Unlock()
}

// snapshot updates the gauges of Status from the files.
func (f *Follower) snapshot() {
	now := f.cfg.Now()
	var s Status
	var oldest time.Time
	for _, t := range f.files {
		switch t.kind {
		case kindFollowing:
			s.Following++
			if lag := t.seenSize - t.offset; lag > 0 {
				s.LagBytes += lag
				if !t.behindSince.IsZero() && (oldest.IsZero() || t.behindSince.Before(oldest)) {
					oldest = t.behindSince
				}
			}
		case kindLegacy:
			s.Legacy++
		case kindIgnored:
			s.Ignored++
		case kindNew:
			s.Waiting++
		}
		if t.stuck != "" {
			s.Stuck = append(s.Stuck, StuckFile{File: t.rel, Reason: t.stuck})
		}
	}
	if !oldest.IsZero() {
		s.LagSeconds = now.Sub(oldest).Seconds()
	}
	slices.SortFunc(s.Stuck, func(a, b StuckFile) int { return strings.Compare(a.File, b.File) })
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.stats.st
	s.Lines, s.Entries, s.Segments, s.Bytes = c.Lines, c.Entries, c.Segments, c.Bytes
	s.Stored, s.Malformed, s.Conflicts, s.Errors = c.Stored, c.Malformed, c.Conflicts, c.Errors
	f.stats.st = s
}

// Status returns the Follower's state as of its last read or rescan.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats.st
	s.Stuck = slices.Clone(s.Stuck)
	return s
}

// Collector returns the Prometheus metrics of the Follower (prefix
// transcript_follow_): the counters of Status, the files by state, the lag and
// the stuck files (one series per stuck file, labelled with its path and
// reason). Register it once.
func (f *Follower) Collector() prometheus.Collector {
	c := &collector{f: f,
		files:      prometheus.NewDesc("transcript_follow_files", "Files under the root by state.", []string{"state"}, nil),
		lagBytes:   prometheus.NewDesc("transcript_follow_lag_bytes", "Bytes the followed files hold past what was handed over.", nil, nil),
		lagSeconds: prometheus.NewDesc("transcript_follow_lag_seconds", "Age of the oldest change not handed over.", nil, nil),
		stuck:      prometheus.NewDesc("transcript_follow_stuck_files", "Files that do not advance (see transcript_follow_stuck_file).", nil, nil),
		stuckFile:  prometheus.NewDesc("transcript_follow_stuck_file", "A file that does not advance, and why.", []string{"file", "reason"}, nil),
	}
	for _, h := range counterHelp() {
		c.counters = append(c.counters, prometheus.NewDesc("transcript_follow_"+h.name, h.help, nil, nil))
	}
	return c
}

type collector struct {
	f                                             *Follower
	counters                                      []*prometheus.Desc // in the order of counterHelp
	files, lagBytes, lagSeconds, stuck, stuckFile *prometheus.Desc
}

// counterHelp names the counters of Status and says what they count.
func counterHelp() []struct {
	name, help string
	value      func(Status) uint64
} {
	return []struct {
		name, help string
		value      func(Status) uint64
	}{
		{"lines_total", "Complete lines read from the followed files.", func(s Status) uint64 { return s.Lines }},
		{"entries_total", "Entries handed over to the uploader.", func(s Status) uint64 { return s.Entries }},
		{"segments_total", "Batches (segments) handed over to the uploader.", func(s Status) uint64 { return s.Segments }},
		{"bytes_total", "Bytes of the entries handed over.", func(s Status) uint64 { return s.Bytes }},
		{"stored_lines_total", "Lines recognised as stored already (by id and bytes) and not handed over again.", func(s Status) uint64 { return s.Stored }},
		{"malformed_lines_total", "Complete lines skipped because they are not entries.", func(s Status) uint64 { return s.Malformed }},
		{"conflicts_total", "Entries the store holds with other bytes (not uploaded).", func(s Status) uint64 { return s.Conflicts }},
		{"errors_total", "Failed reads, hand-overs and state writes (retried).", func(s Status) uint64 { return s.Errors }},
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append(c.counters, c.files, c.lagBytes, c.lagSeconds, c.stuck, c.stuckFile) {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.f.Status()
	for i, h := range counterHelp() {
		ch <- prometheus.MustNewConstMetric(c.counters[i], prometheus.CounterValue, float64(h.value(s)))
	}
	for _, st := range []struct {
		state string
		n     int
	}{{"following", s.Following}, {"legacy", s.Legacy}, {"ignored", s.Ignored}, {"waiting", s.Waiting}} {
		ch <- prometheus.MustNewConstMetric(c.files, prometheus.GaugeValue, float64(st.n), st.state)
	}
	ch <- prometheus.MustNewConstMetric(c.lagBytes, prometheus.GaugeValue, float64(s.LagBytes))
	ch <- prometheus.MustNewConstMetric(c.lagSeconds, prometheus.GaugeValue, s.LagSeconds)
	ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, float64(len(s.Stuck)))
	for _, st := range s.Stuck {
		ch <- prometheus.MustNewConstMetric(c.stuckFile, prometheus.GaugeValue, 1, st.File, st.Reason)
	}
}
