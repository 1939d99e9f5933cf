package server

import "time"

// SetHeldPageClock sets, before s serves a request, the age up to which s
// answers pages from what a handle holds (HeldPageAge) and the clock that times
// the handles' reads.
func SetHeldPageClock(s *Server, age time.Duration, now func() time.Time) {
	s.sessions.heldAge = age
	s.sessions.now = now
	s.sessions.base = now()
}

// CachedSessions returns the number of session handles s keeps and the bytes
// their entries take (repository.Session.HeldBytes) as the cache counts them.
func CachedSessions(s *Server) (int, int64) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return s.sessions.lru.Len(), s.sessions.bytes
}

// BodyBytesInFlight returns the bytes of request bodies s holds now.
func BodyBytesInFlight(s *Server) int64 { return s.bodies.inFlight() }
