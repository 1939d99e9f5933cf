package mirror

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/transcriptstore/transcript/transcript"
)

// Defaults of the Config fields whose zero value means "use the default".
const (
	DefaultWorkers         = 4
	DefaultMaxPending      = 10000
	DefaultMaxPendingBytes = 256 << 20
	DefaultRequestTimeout  = 30 * time.Second
	DefaultMinBackoff      = 100 * time.Millisecond
	DefaultMaxBackoff      = 30 * time.Second
)

// Config configures a Mirror. Store, Writer and OutboxDir are required; every other
// field has a documented default for its zero value.
type Config struct {
	// Store receives the segments. Required. The Mirror does not close it.
	Store *transcript.Store
	// Writer names this process in segment keys. Required.
	Writer *transcript.Writer
	// OutboxDir is the local directory that holds segments until the store has
	// confirmed them. Required. It must be on a local file system, survive a restart
	// of the process (a persistent volume in Kubernetes), and belong to one Mirror at
	// a time: New locks it. Its layout is described in outbox.go.
	OutboxDir string
	// Workers is the number of concurrent uploads (default DefaultWorkers).
	Workers int
	// MaxPending bounds the segments accepted but not yet confirmed by the store
	// (default DefaultMaxPending).
	MaxPending int
	// MaxPendingBytes bounds their total size (default DefaultMaxPendingBytes). A
	// single segment larger than the bound is accepted when nothing else is pending.
	MaxPendingBytes int64
	// BlockWhenFull chooses what Upload does when a bound is reached: false (the
	// default) returns an error wrapping ErrBackpressure at once; true waits for
	// room until the Upload context ends.
	BlockWhenFull bool

	// RequestTimeout bounds each PUT (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before retrying a failed PUT: the
	// n-th retry waits a random duration in [0, min(MaxBackoff, MinBackoff*2^n))
	// ("full jitter"). Defaults DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff time.Duration
	MaxBackoff time.Duration

	// Logger receives upload failures and quarantine notices; nil discards them.
	Logger *slog.Logger
	// MetricLabels are constant labels added to every metric of Collector (for
	// example {"replica": "pod-3"}); nil for none.
	MetricLabels prometheus.Labels
}

// withDefaults validates c and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("no store"))
	}
	if c.Writer == nil {
		errs = append(errs, errors.New("no writer"))
	}
	if c.OutboxDir == "" {
		errs = append(errs, errors.New("no outbox directory"))
	}
	if c.Workers < 0 || c.MaxPending < 0 || c.MaxPendingBytes < 0 ||
		c.RequestTimeout < 0 || c.MinBackoff < 0 || c.MaxBackoff < 0 {
		errs = append(errs, errors.New("negative bound"))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("mirror: config: %w", err)
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxPendingBytes == 0 {
		c.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
