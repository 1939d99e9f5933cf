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
// the log and the context file (fsync per file and flush); a hand-over that fails
// writes nothing, so no entry exists only in the local files (an uploader that
// reads the local files gets them written first). The first batch of a session
// starts with the header line so that a bucket alone can restore it. Entries that
// came from the log or from the store are never uploaded.
//
// # Concurrency
//
// A Tree is safe for concurrent use: mutations are serialised by a mutex, accessors
// return snapshots.
package sessiontree
