package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors, registered on the server's own
// registry.
type metrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	conflicts *prometheus.CounterVec
	inFlight  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "transcript_serve_requests_total",
			Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "transcript_serve_request_duration_seconds",
			Help:    "HTTP request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"route"}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "transcript_serve_append_conflicts_total",
			Help: "Appends refused with 409, by reason (stale_head, entry_conflict).",
		}, []string{"reason"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "transcript_serve_requests_in_flight",
			Help: "Requests whose handler is running (a graceful shutdown waits for them).",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.conflicts, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
