// Package mirror copies what a SessionTree flushes to the transcript store.
//
// The contract between a SessionTree and its uploader is the sessiontree.Uploader
// port, which package sessiontree declares and this package implements: Flush hands
// it exactly the entries that are new since the previous flush, once, as a Batch;
// a tree opened without local files asks it for the entries it accepted and the
// store may lack (PendingEntries). Three uploaders implement it:
//
//   - Mirror, the one to run in production: Upload appends the batch as one segment
//     to a local outbox's journal and returns once an fsync that concurrent Uploads
//     share made it durable; a bounded pool of workers uploads pending segments in
//     the background, retrying with backoff and jitter, and lets each leave the
//     outbox only once the store has confirmed it. A process
//     killed at any moment loses nothing: the next New on the same outbox uploads
//     what is left. Segments the store refuses for good go to failed/ for an
//     operator. Status and Collector (Prometheus) report the backlog, failures and
//     retries; AwaitQuiescence waits until everything is uploaded.
//   - Direct stores the segment in the caller's goroutine (tests, tools, the demo).
//   - Legacy uploads the session's two whole files after every flush, the old
//     full-file mirror kept for backward compatibility and as the benchmarks'
//     baseline.
//
// Create one Mirror per process and share it between all SessionTrees. The outbox
// layout is described in docs/STORAGE.md at the repository root.
package mirror
