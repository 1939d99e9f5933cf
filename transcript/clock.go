package transcript

import (
	"sync"
	"time"
)

// ClockTick is the smallest step of a Clock: the resolution of a segment key's
// time.
const ClockTick = time.Nanosecond

// clockForgetAfter is how far behind the wall clock a session's newest key time
// must fall before a Clock may forget it: from then on the wall clock alone
// already gives a later time.
const clockForgetAfter = time.Minute

// clockKeepSessions is how many sessions a Clock remembers before it starts to
// forget those it no longer needs.
const clockKeepSessions = 4096

// Clock is a hybrid logical clock per session: the time a writer puts in a new
// segment key. Next returns the wall clock, unless that is not after the newest
// key time the clock has seen for the session (written by this store, or read
// by it: every listing feeds the clock through Observe), in which case it returns
// that time plus one ClockTick. A writer that has seen a segment therefore
// always writes a key that sorts after it, however slow its wall clock is, and
// the origin order of the merge (see Origin) follows causality. A Clock is safe
// for concurrent use.
type Clock struct {
	now  func() time.Time
	mu   sync.Mutex
	last map[TranscriptRef]time.Time
}

// NewClock returns a clock reading the wall clock from now (time.Now if nil).
// Tests inject a skewed or frozen now.
func NewClock(now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now, last: map[TranscriptRef]time.Time{}}
}

// Observe records that a key of ref with time t exists.
func (c *Clock) Observe(ref TranscriptRef, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observe(ref.Norm(), t)
}

func (c *Clock) observe(ref TranscriptRef, t time.Time) {
	if t.After(c.last[ref]) {
		c.last[ref] = t
	}
}

// Next returns the time for a new key of ref, in UTC truncated to ClockTick, and
// records it: the wall clock, or one tick after the newest time seen for ref if
// the wall clock is not after it.
func (c *Clock) Next(ref TranscriptRef) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ref = ref.Norm()
	wall := c.now().UTC().Round(0).Truncate(ClockTick)
	t := wall
	if last, ok := c.last[ref]; ok && !t.After(last) {
		t = last.Add(ClockTick)
	}
	c.last[ref] = t
	if len(c.last) > clockKeepSessions {
		for r, l := range c.last {
			if l.Before(wall.Add(-clockForgetAfter)) {
				delete(c.last, r)
			}
		}
	}
	return t
}

// Last returns the newest key time the clock holds for ref (zero if none).
func (c *Clock) Last(ref TranscriptRef) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[ref.Norm()]
}
