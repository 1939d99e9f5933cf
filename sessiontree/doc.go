// Package sessiontree keeps one agent session as a tree of Pi-compatible entries
// (Pi session format version 3, see package pi and docs/ENTRIES.md), builds the model context from it
// exactly as Pi does, and persists it in two local files:
//
//	{root}/{namespace}/agents/{agentId}/sessions/{sessionId}.jsonl      context file
//	{root}/{namespace}/agents/{agentId}/sessions/{sessionId}.log.jsonl  log file
//
// Both files start with the session header line. The log is append-only and holds
// every entry the tree ever persisted; the context file holds what the model still
// needs and is rewritten atomically after a compaction entry is flushed.
//
// The session model itself (entries, header, tree rules such as the active leaf,
// and the context) belongs to package pi; a Tree applies pi's rules to its own
// entry order, and Entry, Header, Context and Model are pi's types.
//
// A tree that pulls from the store (Config.Store) also keeps
// {sessionId}.segments beside them: the store's segments whose entries the files
// hold, so that a pull reads only the segments written since. FilesOf gives the
// paths of a session's files; nothing else spells the layout.
//
// # Raw bytes
//
// Every entry keeps its raw JSON bytes (the line without "\n"). The store parses only
// the top-level fields it needs and never re-serialises an entry it did not create;
// the one exception is the migration of version 1 and 2 files on Import, which is
// deterministic.
//
// # Deferred persistence
//
// Append only buffers. Nothing is written — no file, no segment — until the first
// Flush, which the runtime calls after the first assistant message. Each Flush
// hands exactly the locally created entries that were never handed over before to
// the configured Uploader, as one Batch, and then appends the pending entries to
// the log and the context file (fsync per file and flush); an uploader that
// reads the local files gets them written first. The first batch of a session
// starts with the header line so that a bucket alone can restore it. Entries that
// came from the log or from the store are never uploaded.
//
// # Unsent file
//
// A hand-over that fails (an outbox that is full, a store that is down for an
// uploader that writes to it directly) does not cost the turn: Flush writes the
// local files all the same and returns an error wrapping ErrUnsent. Before the
// local files get an entry the uploader has not accepted, Flush makes the
// unsent file ({sessionId}.unsent, Files.Unsent) durable: which entries, in
// hand-over order, and whether the header is among them. Load reads it back and
// makes those entries pending again (any other loaded entry counts as handed
// over); the next Flush hands them over before newer ones and removes the file
// once nothing it names waits. A Flush whose hand-over succeeds writes no such
// file. Format version 1, text, each line ending in "\n":
//
//	transcript-unsent 1
//	header unsent {xxhash64 of the header line, 16 lower-case hex digits}   or: header sent
//	{entry id, Go-quoted (strconv.Quote)}                                   one line per entry
//	xxh64 {xxhash64 of all the bytes before this line, 16 lower-case hex digits}
//
// It is replaced atomically (temp file, fsync, rename, fsync of the directory),
// so a crash leaves the old or the new one. Load accepts exactly this encoding:
// a file cut short at any byte, damaged, or of another version fails the load
// with ErrUnsentFile rather than counting unsent entries as handed over. An id
// the local files lack was recorded by a flush that crashed before writing them
// (it never returned) and is ignored; "header unsent" applies only to the
// header with that checksum. Entries the store (Pull) or the uploader
// (PendingEntries) turns out to hold count as handed over.
//
// # Concurrency
//
// A Tree is safe for concurrent use: mutations are serialised by a mutex, accessors
// return snapshots.
package sessiontree
