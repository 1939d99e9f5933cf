package metricbucket_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
	"github.com/transcriptstore/transcript/transcript/bucket/metricbucket"
)

// The wrapper is a conforming bucket over every backend, every capability (strict
// mode's conditional writes included) forwarded; one registry serves them all.
func TestBucket_Conformance(t *testing.T) {
	m, err := metricbucket.NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	t.Run("mem", func(t *testing.T) {
		buckettest.Run(t, func(t *testing.T) bucket.Bucket { return m.Wrap(membucket.New(), "mem") })
	})
	t.Run("file", func(t *testing.T) {
		opts := buckettest.Options{ChecksumNotStored: true, FileDirConflict: true}
		buckettest.RunWithOptions(t, opts, func(t *testing.T) bucket.Bucket {
			b, err := filebucket.New(t.TempDir())
			require.NoError(t, err)
			return m.Wrap(b, "file")
		})
	})
	for _, e := range s3test.Engines() {
		t.Run(e.Name, func(t *testing.T) {
			buckettest.RunWithOptions(t, e.Conformance, func(t *testing.T) bucket.Bucket {
				return m.Wrap(e.NewBucket(t, "metricbucket-"), e.Name)
			})
		})
	}
}

// sample is one operation's series.
type sample struct {
	requests, failures, bytes float64
	observations              uint64
}

// read gathers reg and returns the series of op on backend "mem".
func read(t *testing.T, reg *prometheus.Registry, op metricbucket.Op) sample {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var s sample
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if !hasLabels(m, string(op), "mem") {
				continue
			}
			switch f.GetName() {
			case metricbucket.MetricRequests:
				s.requests = m.GetCounter().GetValue()
			case metricbucket.MetricFailures:
				s.failures = m.GetCounter().GetValue()
			case metricbucket.MetricTransferred:
				s.bytes = m.GetCounter().GetValue()
			case metricbucket.MetricDuration:
				s.observations = m.GetHistogram().GetSampleCount()
			}
		}
	}
	return s
}

func hasLabels(m *dto.Metric, op, backend string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	return got["operation"] == op && got["backend"] == backend
}

var errStop = errors.New("stop")

// Every operation is counted under its own label, with its latency and payload;
// answers of the contract (not found, exists, precondition failed, a listing the
// caller stopped) are not failures, other errors are.
func TestBucket_Metrics(t *testing.T) {
	ctx := t.Context()
	body := func(s string) io.Reader { return strings.NewReader(s) }
	tests := []struct {
		name string
		op   metricbucket.Op
		call func(b bucket.Bucket) error
		want sample
	}{
		{"get", metricbucket.OpGet, func(b bucket.Bucket) error {
			rc, _, err := b.Get(ctx, "k")
			if err != nil {
				return err
			}
			_, err = io.Copy(io.Discard, rc)
			return errors.Join(err, rc.Close())
		}, sample{requests: 1, bytes: 5, observations: 1}},
		{"get missing", metricbucket.OpGet, func(b bucket.Bucket) error {
			_, _, err := b.Get(ctx, "missing")
			return ignore(err, bucket.ErrNotFound)
		}, sample{requests: 1, observations: 1}},
		{"get range", metricbucket.OpGetRange, func(b bucket.Bucket) error {
			_, err := b.GetRange(ctx, "k", 1, 3)
			return err
		}, sample{requests: 1, bytes: 3, observations: 1}},
		{"get with etag", metricbucket.OpGetWithETag, func(b bucket.Bucket) error {
			_, _, err := b.GetWithETag(ctx, "k")
			return err
		}, sample{requests: 1, bytes: 5, observations: 1}},
		{"stat", metricbucket.OpStat, func(b bucket.Bucket) error {
			_, err := b.Stat(ctx, "k")
			return err
		}, sample{requests: 1, observations: 1}},
		{"list stopped by the caller", metricbucket.OpList, func(b bucket.Bucket) error {
			err := b.List(ctx, bucket.ListOptions{}, func(bucket.ObjectInfo) error { return errStop })
			return ignore(err, errStop)
		}, sample{requests: 1, observations: 1}},
		{"put", metricbucket.OpPut, func(b bucket.Bucket) error {
			return b.Put(ctx, "new", body("abc"), 3, bucket.PutOptions{})
		}, sample{requests: 1, bytes: 3, observations: 1}},
		{"put existing", metricbucket.OpPut, func(b bucket.Bucket) error {
			return ignore(b.Put(ctx, "k", body("other"), 5, bucket.PutOptions{}), bucket.ErrExists)
		}, sample{requests: 1, bytes: 5, observations: 1}},
		{"put invalid key", metricbucket.OpPut, func(b bucket.Bucket) error {
			return ignore(b.Put(ctx, "../k", body("x"), 1, bucket.PutOptions{}), bucket.ErrInvalidKey)
		}, sample{requests: 1, failures: 1, observations: 1}},
		{"put if stale", metricbucket.OpPutIf, func(b bucket.Bucket) error {
			_, err := b.PutIf(ctx, "k", body("xy"), 2, bucket.Cond{IfMatch: "stale"})
			return ignore(err, bucket.ErrPreconditionFailed)
		}, sample{requests: 1, bytes: 2, observations: 1}},
		{"replace", metricbucket.OpReplace, func(b bucket.Bucket) error {
			return b.Replace(ctx, "k", body("wxyz"), 4, bucket.PutOptions{})
		}, sample{requests: 1, bytes: 4, observations: 1}},
		{"delete", metricbucket.OpDelete, func(b bucket.Bucket) error { return b.Delete(ctx, "k") },
			sample{requests: 1, observations: 1}},
		{"delete batch", metricbucket.OpDeleteBatch, func(b bucket.Bucket) error {
			return b.DeleteBatch(ctx, []string{"k", "other"})
		}, sample{requests: 1, observations: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := metricbucket.NewMetrics(reg)
			require.NoError(t, err)
			inner := membucket.New()
			require.NoError(t, inner.Put(ctx, "k", bytes.NewReader([]byte("hello")), 5, bucket.PutOptions{}))
			require.NoError(t, tt.call(m.Wrap(inner, "mem")))
			require.Equal(t, tt.want, read(t, reg, tt.op))
		})
	}
}

// ignore returns nil if err wraps want, and an error otherwise (also when err is
// nil: the call was meant to fail).
func ignore(err, want error) error {
	if errors.Is(err, want) {
		return nil
	}
	return errors.Join(errors.New("want "+want.Error()), err)
}

// A Get whose body fails half way is a failure, observed when the body is closed.
func TestBucket_GetBodyFailure(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metricbucket.NewMetrics(reg)
	require.NoError(t, err)
	b := m.Wrap(failingBody{membucket.New()}, "mem")
	rc, _, err := b.Get(t.Context(), "any")
	require.NoError(t, err)
	_, err = io.ReadAll(rc)
	require.ErrorIs(t, err, errCut)
	require.Equal(t, sample{requests: 1}, read(t, reg, metricbucket.OpGet), "nothing observed before Close")
	require.NoError(t, rc.Close())
	require.NoError(t, rc.Close(), "a second Close observes nothing more")
	require.Equal(t, sample{requests: 1, failures: 1, bytes: 2, observations: 1}, read(t, reg, metricbucket.OpGet))
}

var errCut = errors.New("connection cut")

// failingBody answers every Get with a body that fails after two bytes.
type failingBody struct{ *membucket.Bucket }

func (failingBody) Get(context.Context, string) (io.ReadCloser, bucket.ObjectInfo, error) {
	return io.NopCloser(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(errCut))), bucket.ObjectInfo{}, nil
}

// Two Metrics cannot register on one registry; one Metrics serves many buckets.
func TestNewMetrics_RegistersOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := metricbucket.NewMetrics(reg)
	require.NoError(t, err)
	_, err = metricbucket.NewMetrics(reg)
	require.Error(t, err)
}
