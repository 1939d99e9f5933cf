package s3bucket

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultMaxRetries     = 3
	DefaultMaxBufferedPut = 64 << 20
)

// Config selects an S3 bucket. Key prefixes are not configured here: prefixing is
// the store's job, the backend sees whole keys.
type Config struct {
	// Endpoint is the server's host[:port], without a scheme (e.g. "127.0.0.1:9000",
	// "s3.eu-central-1.amazonaws.com"). Required.
	Endpoint string
	// Bucket is the bucket name. Required.
	Bucket string
	// Region is the bucket's region. Empty lets the client discover it (one extra
	// request per bucket); MinIO accepts any.
	Region string
	// AccessKey and SecretKey are the credentials. Empty means the environment
	// variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; if those are empty
	// too, requests are anonymous. They never appear in errors or in String.
	AccessKey string
	SecretKey string
	// Insecure selects plain HTTP instead of HTTPS.
	Insecure bool
	// Create makes New create the bucket if it does not exist. Without it, New
	// fails for a missing bucket.
	Create bool
	// NoCheck makes New send no request: it does not ask whether the bucket
	// exists, and the first request finds out. A process that must start while
	// the server cannot be reached sets it: a replica whose outbox holds its
	// turns until the store is back, which New would otherwise fail after the
	// request timeout (or hold while the server is frozen). It cannot be
	// combined with Create.
	NoCheck bool
	// RequestTimeout bounds each call to the server, retries included: a Put, a
	// Stat, a Delete, a Get until its body is closed, and each page of a List.
	// Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxRetries is how many times a failed request (network error, 5xx, 429) is
	// retried, with exponential backoff and jitter. Zero means DefaultMaxRetries;
	// negative means no retries. A Put is retried only when its source can be
	// replayed (an io.ReaderAt and io.Seeker, or a body small enough to buffer).
	MaxRetries int
	// MaxBufferedPut is how many bytes Put holds in memory: a Put of unknown size
	// (-1) buffers its whole source and fails if it is larger; a Put of known size
	// up to this, whose source cannot seek, is buffered so that it can be retried.
	// Zero means DefaultMaxBufferedPut.
	MaxBufferedPut int64
}

// String describes the configuration without its secrets.
func (c Config) String() string {
	scheme := "https"
	if c.Insecure {
		scheme = "http"
	}
	key := "unset"
	if c.AccessKey != "" {
		key = "set"
	}
	return fmt.Sprintf("s3bucket.Config{%s://%s/%s region=%q credentials=%s secret=REDACTED create=%t timeout=%s retries=%d}",
		scheme, c.Endpoint, c.Bucket, c.Region, key, c.Create, c.RequestTimeout, c.MaxRetries)
}

// GoString redacts like String, so that %#v does not print the secret either.
func (c Config) GoString() string { return c.String() }

// Format prints String for every verb (fmt.Formatter): without it a verb such as
// %d or %x would print the fields, the secret key among them.
func (c Config) Format(f fmt.State, verb rune) { _, _ = fmt.Fprint(f, c.String()) }

// withDefaults returns c with defaults and credentials from the environment filled
// in, or an error for a config that cannot work.
func (c Config) withDefaults() (Config, error) {
	if c.Endpoint == "" {
		return c, errors.New("s3 config: empty endpoint")
	}
	if c.Bucket == "" {
		return c, errors.New("s3 config: empty bucket")
	}
	if c.Create && c.NoCheck {
		return c, errors.New("s3 config: Create needs the check NoCheck leaves out")
	}
	if c.AccessKey == "" && c.SecretKey == "" {
		c.AccessKey = os.Getenv("AWS_ACCESS_KEY_ID")
		c.SecretKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.MaxBufferedPut <= 0 {
		c.MaxBufferedPut = DefaultMaxBufferedPut
	}
	return c, nil
}
