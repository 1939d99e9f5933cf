package s3bucket

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// serverClock remembers the Date header of the latest response, with the local
// monotonic time it arrived at, so that the server's time can be read without a
// request of its own.
type serverClock struct {
	mu       sync.Mutex
	date     time.Time // the server's Date (whole seconds)
	received time.Time // local time, with its monotonic reading
}

// observe records the Date of a response.
func (c *serverClock) observe(h http.Header) {
	d, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.received.IsZero() || !d.Before(c.date) {
		c.date, c.received = d, now
	}
}

// now returns the server's time: the latest Date plus the local time elapsed since
// (measured on the monotonic clock, so a step of the local wall clock changes
// nothing); false when no response has been seen yet.
func (c *serverClock) now() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.received.IsZero() {
		return time.Time{}, false
	}
	return c.date.Add(time.Since(c.received)), true
}

// clockTransport records the Date of every response in clock.
type clockTransport struct {
	inner http.RoundTripper
	clock *serverClock
}

func (t clockTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.inner.RoundTrip(req)
	if resp != nil {
		t.clock.observe(resp.Header)
	}
	return resp, err
}

// Now is the bucket's clock (bucket.Clock): the server's time, from the Date header of its
// latest response (whole seconds, so an age is never overestimated by the
// rounding), plus the time elapsed since. Before the first response it asks the
// server with a HEAD of the bucket, whose answer (even a refusal) carries a Date.
func (b *Bucket) Now(ctx context.Context) (time.Time, error) {
	if t, ok := b.clock.now(); ok {
		return t, nil
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	_, err := b.client.BucketExists(rctx, b.cfg.Bucket)
	if t, ok := b.clock.now(); ok {
		return t, nil
	}
	if err == nil {
		err = errNoDate
	}
	return time.Time{}, classify(ctx, err)
}
