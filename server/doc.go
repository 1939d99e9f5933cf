// Package server is the HTTP/JSON API of Pi's session storage port over package
// repository (openapi.yaml describes every route): each /v1 request is made as the
// owner of a verified credential (JWTAuth: a bearer JWT; HeaderAuth: headers an
// authenticating proxy sets), and works in that owner's repository, which a
// repository.Service opens; the server never names the store, so an owner can
// reach no other owner's keys. Sessions are created, listed (a page at a time,
// with a cursor, filtered by cwd: repository.ListPage), opened (with the first
// page of entries when asked: ?entries=N), read in pages (at most
// Config.MaxPage entries and Config.MaxPageBytes of them, one entry at least),
// appended to (strict by default: an append commits only at its expected head),
// forked (at an entry, empty or whole, under the id the client asks for),
// deleted and watched (GET /v1/sessions/{id}/events: Server-Sent Events of the
// committed entries in sequence order, resumable with Last-Event-ID, with
// heartbeats, a bounded number per owner, ended by Server.EndStreams at
// shutdown).
//
// All state is in the bucket: any number of servers may serve one bucket. A
// server keeps the handles of recently used sessions and brings a handle up to
// date with what is new in the bucket on every request (repository.Session.Refresh:
// the head and the segments committed after it, or the newest keys), so reading a
// session page by page costs O(n) in total, a read of an unchanged session a
// LIST or less, and a server that did not see an append still answers what the
// bucket holds. One exception saves a page read its round trip: in a strict
// session, where a sequence number names the same entry for ever, a page that
// ends before the last entry the handle holds is answered from the handle when
// the handle read the bucket less than HeldPageAge (1 s) ago. Its entries are
// those the bucket holds at its numbers; its entryCount and head, and a
// deletion or re-creation of the session by another server, may lag by that
// age. The page that reaches the end of what the handle holds reads the
// bucket, so a client that reads a session to its end ends with what the bucket
// holds (or 404), and reading a session page by page costs the server's first
// read plus two requests (one when the client stops at the page whose nextSeq
// reaches its entryCount, none when the session fits the page the open answers
// with ?entries=N, as the TypeScript adapter reads), and one a second while
// the read lasts longer, not one per page. One watcher per watched session
// (not per stream) polls the bucket for what other servers commit; appends
// through this server reach its streams at once.
//
// An append's entries are checked once, by the repository (pi's rules, the entry
// limit); a refused entry is the client's error, 400 invalid_entry or 413
// too_large with its index, never a 500. Errors map by the sentinel they wrap:
// bucket.ErrNotFound to 404, transcript.ErrConflict to 409
// (repository.ErrStaleHead: stale_head, with the committed head), bucket.ErrExists
// to 409 exists, bucket.ErrUnavailable to 503 with Retry-After. Every error code
// is an ErrorCode constant, listed by ErrorCodes and by openapi.yaml. Every
// answer is logged (one structured line, without tokens or entry contents) and
// counted on /metrics; /healthz and /readyz answer probes.
package server
