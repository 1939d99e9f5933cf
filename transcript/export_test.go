package transcript

import "time"

// SetPayloadFloor lowers the least delete delay of payload objects of s, so that
// tests of the garbage collection need not wait MinPayloadDeleteDelay.
func SetPayloadFloor(s *Store, d time.Duration) { s.payloadFloor = d }

// AgePayloadCheck makes c as if it had been taken d earlier, so that tests reach
// the second look of a copy that lands late.
func AgePayloadCheck(c *PayloadCheck, d time.Duration) { c.at = c.at.Add(-d) }

// PayloadWindow is how long a copy of references relies on its check.
const PayloadWindow = payloadWindow

// SetResolveWindow sets the payload bytes EachResolved of s fetches ahead, so
// that tests fill the window with a few small payloads.
func SetResolveWindow(s *Store, n int64) { s.resolveWindow = n }

// SetSegmentTarget sets the size at which PrepareSegments, PrepareParsed and
// AppendSegments cut a batch into several segments.
func SetSegmentTarget(s *Store, n int64) { s.segmentTarget = n }
