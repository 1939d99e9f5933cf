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
	streams   prometheus.Gauge
	watched   prometheus.Gauge
	events    prometheus.Counter
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
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "transcript_serve_event_streams",
			Help: "Open event streams (GET /v1/sessions/{id}/events).",
		}),
		watched: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "transcript_serve_watched_sessions",
			Help: "Sessions with open event streams, each read by one watcher however many streams it has.",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "transcript_serve_stream_entries_total",
			Help: "Entries sent on event streams.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.conflicts, m.inFlight, m.streams, m.watched, m.events} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
