package transcript

import "time"

// SetPayloadFloor lowers the least delete delay of payload objects of s, so that
// tests of the garbage collection need not wait MinPayloadDeleteDelay.
func SetPayloadFloor(s *Store, d time.Duration) { s.payloadFloor = d }
