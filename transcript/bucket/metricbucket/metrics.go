// Package metricbucket instruments a bucket.Bucket with Prometheus metrics: the
// requests, failures, latency and bytes of every operation, labelled with the
// operation and the backend. It is a wrapper like any other, so it forwards every
// capability of the bucket it wraps.
//
// One Metrics registers the collectors once; each Wrap labels a bucket with its
// backend, so several buckets (or several wrappers of one) share a registry:
//
//	m, err := metricbucket.NewMetrics(reg)
//	...
//	b = m.Wrap(b, "s3")
//
// The metrics (operation is one of the Op constants):
//
//	transcript_bucket_requests_total{operation, backend}            calls, failed or not
//	transcript_bucket_request_failures_total{operation, backend}    calls that failed
//	transcript_bucket_request_duration_seconds{operation, backend}  latency histogram
//	transcript_bucket_transferred_bytes_total{operation, backend}   payload sent or received
//
// An answer that is part of the contract is not a failure: ErrNotFound from a
// read, ErrExists from Put, ErrPreconditionFailed from PutIf, and a call whose
// context was cancelled. A Get is timed, and its body's bytes are counted, until
// the caller closes the body; a read error of the body is a failure of that Get.
// Now (the bucket's clock) is forwarded without metrics.
package metricbucket

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Op names an operation in the "operation" label.
type Op string

// The operations of a bucket, as the "operation" label names them.
const (
	OpGet         Op = "get"
	OpGetRange    Op = "get_range"
	OpGetWithETag Op = "get_with_etag"
	OpStat        Op = "stat"
	OpList        Op = "list"
	OpPut         Op = "put"
	OpPutIf       Op = "put_if"
	OpReplace     Op = "replace"
	OpDelete      Op = "delete"
	OpDeleteBatch Op = "delete_batch"
)

// Metric names.
const (
	MetricRequests    = "transcript_bucket_requests_total"
	MetricFailures    = "transcript_bucket_request_failures_total"
	MetricDuration    = "transcript_bucket_request_duration_seconds"
	MetricTransferred = "transcript_bucket_transferred_bytes_total"
)

// Metrics are the collectors of the bucket metrics, registered once on one
// registry. It is safe for concurrent use.
type Metrics struct {
	requests    *prometheus.CounterVec
	failures    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	transferred *prometheus.CounterVec
}

// NewMetrics registers the bucket metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"operation", "backend"}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests,
			Help: "Bucket operations called, failed or not, by operation and backend.",
		}, labels),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricFailures,
			Help: "Bucket operations that failed (not found, exists, precondition failed and cancellation are not failures).",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricDuration,
			Help:    "Latency of bucket operations (a get until its body is closed), by operation and backend.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, labels),
		transferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricTransferred,
			Help: "Payload bytes sent by writes and received by reads, by operation and backend.",
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.requests, m.failures, m.duration, m.transferred} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Wrap returns b instrumented with m, its series labelled backend (for example the
// scheme of its URL: "s3", "file", "mem").
func (m *Metrics) Wrap(b bucket.Bucket, backend string) *Bucket {
	return &Bucket{inner: b, m: m, backend: backend}
}

// call is one operation in progress.
type call struct {
	b     *Bucket
	op    Op
	start time.Time
}

// begin counts a call of op and starts its clock.
func (b *Bucket) begin(op Op) call {
	b.m.requests.WithLabelValues(string(op), b.backend).Inc()
	return call{b: b, op: op, start: time.Now()}
}

// end observes the call's latency and, unless err is an expected answer, counts a
// failure; bytes is the payload moved. It returns err.
func (c call) end(err error, bytes int64) error {
	op, backend := string(c.op), c.b.backend
	c.b.m.duration.WithLabelValues(op, backend).Observe(time.Since(c.start).Seconds())
	if bytes > 0 {
		c.b.m.transferred.WithLabelValues(op, backend).Add(float64(bytes))
	}
	if err != nil && !expected(c.op, err) {
		c.b.m.failures.WithLabelValues(op, backend).Inc()
	}
	return err
}

// expected reports an error that is an answer of the bucket's contract, not a
// failure of the request.
func expected(op Op, err error) bool {
	switch {
	case errors.Is(err, context.Canceled):
		return true
	case errors.Is(err, bucket.ErrNotFound):
		return op == OpGet || op == OpGetRange || op == OpGetWithETag || op == OpStat
	case errors.Is(err, bucket.ErrExists):
		return op == OpPut
	case errors.Is(err, bucket.ErrPreconditionFailed):
		return op == OpPutIf
	}
	return false
}
