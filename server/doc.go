// Package server is the HTTP/JSON API of Pi's session storage port over package
// repository (openapi.yaml describes every route): each /v1 request is made as the
// owner of a verified credential (JWTAuth: a bearer JWT; HeaderAuth: headers an
// authenticating proxy sets), and works in that owner's repository, which a
// repository.Service opens; the server never names the store, so an owner can
// reach no other owner's keys. Sessions are created, listed, opened, read in
// pages, appended to (strict by default: an append commits only at its expected
// head), forked and deleted. All state is in the bucket: any number of servers may
// serve one bucket.
//
// An append's entries are checked once, by the repository (pi's rules, the entry
// limit); a refused entry answers 400 invalid_entry or 413 too_large with its
// index. Errors map by the sentinel they wrap: bucket.ErrNotFound to 404,
// transcript.ErrConflict to 409 (repository.ErrStaleHead: stale_head, with the
// committed head), bucket.ErrUnavailable to 503 with Retry-After. Every answer is
// logged (one structured line, without tokens or entry contents) and counted on
// /metrics; /healthz and /readyz answer probes.
package server
