package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/transcriptstore/transcript/internal/cli"
)

// metricsJob is the Pushgateway job name the metrics are pushed under.
const metricsJob = "transcript-compact"

// pushMetrics pushes the run's metrics to the Pushgateway at url, when url is not
// "", and warns on the job's error output if that fails: the run's result stands.
func (j *job) pushMetrics(ctx context.Context, url string, sum *summary, runErr error) {
	if url == "" {
		return
	}
	if err := pushMetrics(ctx, url, sum, j.shard, j.shards, runErr); err != nil {
		fmt.Fprintf(j.errOut, "warning: --metrics-push: %s\n", cli.Escape(err.Error()))
	}
}

// pushMetrics pushes the run's summary to the Pushgateway at url, grouped by
// shard, with an HTTP POST: the metrics of this run replace those of the previous
// one, except transcript_compact_last_success_timestamp_seconds, which only a run
// that ended without a problem sets (runErr is the error the run ended with).
func pushMetrics(ctx context.Context, url string, sum *summary, shard, shards int, runErr error) error {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, value float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "transcript_compact_" + name, Help: help})
		g.Set(value)
		reg.MustRegister(g)
	}
	labelled := func(name, help, label string, values map[string]float64) {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "transcript_compact_" + name, Help: help}, []string{label})
		for l, v := range values {
			g.WithLabelValues(l).Set(v)
		}
		reg.MustRegister(g)
	}
	labelled("sessions", "Sessions of the last run, by result.", "result", map[string]float64{
		"listed": float64(sum.SessionsListed), "scanned": float64(sum.SessionsScanned),
		"compacted": float64(sum.SessionsCompacted), "skipped_recent": float64(sum.SessionsSkipped),
		"skipped": float64(len(sum.Skipped)), "contended": float64(sum.SessionsContended),
		"failed": float64(sum.SessionsFailed),
	})
	labelled("segments", "Segments of the last run: merged (in), written (out), marked, deleted, waiting for their delay or for another run's output to settle (pending).", "kind", map[string]float64{
		"in": float64(sum.SegmentsIn), "out": float64(sum.SegmentsOut), "marked": float64(sum.Marks),
		"deleted": float64(sum.Deletions), "pending": float64(sum.PendingDeletions),
	})
	labelled("bytes", "Stored bytes the last run merged (in) and wrote (out).", "kind", map[string]float64{
		"in": float64(sum.BytesIn), "out": float64(sum.BytesOut),
	})
	if rs := sum.Retention; rs != nil {
		labelled("retention_sessions", "Sessions the last run's retention examined, by what it did (in a dry run: would do).", "action", map[string]float64{
			"examined": float64(rs.SessionsExamined), "marked": float64(rs.Marked), "pending": float64(rs.Pending),
			"deleted": float64(rs.Deleted), "held": float64(rs.KeptByHold), "survived": float64(rs.Survived),
			"released": float64(rs.Released), "late_write": float64(rs.LateWrites), "deferred": float64(rs.Deferred),
			"failed": float64(rs.Failed),
		})
		gauge("retention_deleted_objects", "Objects the last run's retention deleted.", float64(rs.ObjectsDeleted))
		gauge("retention_deleted_bytes", "Segment bytes the last run's retention deleted.", float64(rs.BytesDeleted))
	}
	gauge("dry_run", "1 if the last run was a dry run.", boolFloat(sum.DryRun))
	gauge("duration_seconds", "How long the last run took.", sum.DurationSeconds)
	end := float64(time.Now().Unix())
	gauge("last_completion_timestamp_seconds", "When the last run ended (Unix time).", end)
	if runErr == nil && !sum.problems() {
		gauge("last_success_timestamp_seconds", "When the last run without a problem ended (Unix time).", end)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return push.New(url, metricsJob).
		Grouping("shard", strconv.Itoa(shard)).Grouping("shards", strconv.Itoa(shards)).
		Gatherer(reg).AddContext(ctx)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
