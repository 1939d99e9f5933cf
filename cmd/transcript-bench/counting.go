package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/metricbucket"
)

// counts are the requests a counted bucket has made, by the S3 request each
// makes, and the payload bytes its writes sent.
type counts struct {
	Get, Stat, List, Put, Delete, Replace int64
	// BytesUp is the payload of the Put, PutIf and Replace calls.
	BytesUp int64
}

// Requests returns the total number of requests.
func (c counts) Requests() int64 { return c.Get + c.Stat + c.List + c.Put + c.Delete + c.Replace }

// sub returns c minus b.
func (c counts) sub(b counts) counts {
	return counts{Get: c.Get - b.Get, Stat: c.Stat - b.Stat, List: c.List - b.List, Put: c.Put - b.Put,
		Delete: c.Delete - b.Delete, Replace: c.Replace - b.Replace, BytesUp: c.BytesUp - b.BytesUp}
}

// add returns c plus b.
func (c counts) add(b counts) counts {
	return counts{Get: c.Get + b.Get, Stat: c.Stat + b.Stat, List: c.List + b.List, Put: c.Put + b.Put,
		Delete: c.Delete + b.Delete, Replace: c.Replace + b.Replace, BytesUp: c.BytesUp + b.BytesUp}
}

// div returns c with every count divided by n (a mean over n runs).
func (c counts) div(n int64) counts {
	return counts{Get: c.Get / n, Stat: c.Stat / n, List: c.List / n, Put: c.Put / n,
		Delete: c.Delete / n, Replace: c.Replace / n, BytesUp: c.BytesUp / n}
}

// describe spells the requests of c by kind.
func (c counts) describe() string {
	return fmt.Sprintf("%d GET, %d HEAD, %d LIST, %d PUT, %d DELETE", c.Get, c.Stat, c.List, c.Put+c.Replace, c.Delete)
}

// field returns the count an operation adds to: ranged and ETag reads are GETs,
// a conditional write a PUT, a batch delete one DELETE (DeleteObjects), as S3
// bills them.
func (c *counts) field(op metricbucket.Op) *int64 {
	switch op {
	case metricbucket.OpGet, metricbucket.OpGetRange, metricbucket.OpGetWithETag:
		return &c.Get
	case metricbucket.OpStat:
		return &c.Stat
	case metricbucket.OpList:
		return &c.List
	case metricbucket.OpPut, metricbucket.OpPutIf:
		return &c.Put
	case metricbucket.OpReplace:
		return &c.Replace
	case metricbucket.OpDelete, metricbucket.OpDeleteBatch:
		return &c.Delete
	}
	return nil
}

// counted is a bucket measured by the store's metrics wrapper on a registry of
// its own; its counts are read from the metrics as a scraper would read them.
type counted struct {
	*metricbucket.Bucket
	reg  *prometheus.Registry
	base counts // subtracted by Counts: the totals at the last ResetCounts
}

// countBucket wraps b in a counted bucket.
func countBucket(b bucket.Bucket) (*counted, error) {
	reg := prometheus.NewRegistry()
	m, err := metricbucket.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("bucket metrics: %w", err)
	}
	return &counted{Bucket: m.Wrap(b, "bench"), reg: reg}, nil
}

// Counts returns the requests and bytes since the last ResetCounts.
func (c *counted) Counts() (counts, error) {
	total, err := c.totals()
	return total.sub(c.base), err
}

// ResetCounts starts the counts again from zero.
func (c *counted) ResetCounts() error {
	total, err := c.totals()
	c.base = total
	return err
}

// measure returns the requests and bytes of fn.
func (c *counted) measure(fn func() error) (counts, error) {
	if err := c.ResetCounts(); err != nil {
		return counts{}, err
	}
	if err := fn(); err != nil {
		return counts{}, err
	}
	return c.Counts()
}

// totals reads the counts since the bucket was wrapped from its metrics; the
// bytes of the operations counted as Put and Replace (not of reads) are BytesUp.
func (c *counted) totals() (counts, error) {
	families, err := c.reg.Gather()
	if err != nil {
		return counts{}, fmt.Errorf("gather bucket metrics: %w", err)
	}
	var total counts
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var op metricbucket.Op
			for _, l := range m.GetLabel() {
				if l.GetName() == "operation" {
					op = metricbucket.Op(l.GetValue())
				}
			}
			p := total.field(op)
			switch {
			case p == nil:
			case f.GetName() == metricbucket.MetricRequests:
				*p += int64(m.GetCounter().GetValue())
			case f.GetName() == metricbucket.MetricTransferred && p != &total.Get:
				total.BytesUp += int64(m.GetCounter().GetValue())
			}
		}
	}
	return total, nil
}
