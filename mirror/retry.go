package mirror

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// permanent reports whether a PutSegment error can never succeed by retrying: another
// object already holds the key with other content, or the key or reference is invalid
// (for example a segment left in the outbox by a process with another store prefix).
// Every other error (network, timeout, 5xx, throttling) is transient.
func permanent(err error) bool {
	return errors.Is(err, bucket.ErrExists) ||
		errors.Is(err, bucket.ErrInvalidKey) ||
		errors.Is(err, transcript.ErrNotSegmentKey) ||
		errors.Is(err, transcript.ErrInvalidRef)
}

// backoff returns the wait before retry number n (0 for the first retry): a uniformly
// random duration in [0, min(max, min*2^n)), the "full jitter" of
// https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/, which
// spreads the retries of many workers and replicas after a shared outage.
func backoff(n int, min, max time.Duration) time.Duration {
	ceil := min
	for i := 0; i < n && ceil < max; i++ {
		ceil *= 2
	}
	if ceil > max {
		ceil = max
	}
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}
