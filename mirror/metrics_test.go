package mirror_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestMirror_Collector(t *testing.T) {
	fb := faultbucket.Wrap(membucket.New())
	fb.FailNext(faultbucket.OpPut, 2, nil)
	m := newMirror(t, newStore(t, fb, ""), "", func(c *mirror.Config) {
		c.Workers = 1
		c.MetricLabels = prometheus.Labels{"replica": "r1"}
	})
	s := newSession("a", "s")
	ctx := ctxTimeout(t, 10*time.Second)
	require.NoError(t, m.Upload(ctx, s.batch(2)))
	require.NoError(t, m.Upload(ctx, s.batch(2)))
	require.NoError(t, m.AwaitQuiescence(ctx))

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m.Collector()))
	st := m.Status()
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP transcript_mirror_pending_segments Segments accepted by the mirror and not yet confirmed by the store.
# TYPE transcript_mirror_pending_segments gauge
transcript_mirror_pending_segments{replica="r1"} 0
# HELP transcript_mirror_uploaded_segments_total Segments uploaded and confirmed by the store.
# TYPE transcript_mirror_uploaded_segments_total counter
transcript_mirror_uploaded_segments_total{replica="r1"} 2
# HELP transcript_mirror_upload_failures_total Failed upload attempts, transient or permanent.
# TYPE transcript_mirror_upload_failures_total counter
transcript_mirror_upload_failures_total{replica="r1"} 2
# HELP transcript_mirror_upload_retries_total Upload attempts made after a transient failure.
# TYPE transcript_mirror_upload_retries_total counter
transcript_mirror_upload_retries_total{replica="r1"} 2
# HELP transcript_mirror_quarantined_segments Segments in the outbox quarantine, rejected by the store for good.
# TYPE transcript_mirror_quarantined_segments gauge
transcript_mirror_quarantined_segments{replica="r1"} 0
`), mirror.MetricPendingSegments, mirror.MetricUploadedSegments, mirror.MetricUploadFailures,
		mirror.MetricUploadRetries, mirror.MetricQuarantinedSegments))
	require.Equal(t, 12, testutil.CollectAndCount(m.Collector()), "eleven figures and no stuck session")
	require.Equal(t, uint64(2), st.JournalRecords, "one segment per Upload")
	// Each Upload alone fsynced its record; the first also the directory, for
	// the journal file it started.
	require.Equal(t, uint64(3), st.JournalSyncs)
	require.Equal(t, float64(st.JournalRecords), gauge(t, reg, mirror.MetricJournalRecords))
	require.Equal(t, float64(st.JournalSyncs), gauge(t, reg, mirror.MetricJournalSyncs))
	require.Equal(t, float64(st.UploadedBytes), gauge(t, reg, mirror.MetricUploadedBytes))
	require.Equal(t, float64(st.LastErrorTime.UnixNano())/1e9, gauge(t, reg, mirror.MetricLastErrorTimestamp))
	require.NoError(t, testutil.CollectAndCompare(m.Collector(), strings.NewReader(`
# HELP transcript_mirror_pending_bytes Total size of the pending segments, in bytes.
# TYPE transcript_mirror_pending_bytes gauge
transcript_mirror_pending_bytes{replica="r1"} 0
`), mirror.MetricPendingBytes))
}

// gauge returns the value of the one sample of metric name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.Metric, 1)
			m := mf.Metric[0]
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
