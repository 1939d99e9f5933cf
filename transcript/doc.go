// Package transcript stores session transcripts as immutable segments in a bucket and
// reads them back by union-merge.
//
// Every flush of a session becomes one new segment object that nobody overwrites
// (create-only PUT); readers list a session's segments, fetch them in parallel, verify
// them and merge their entries by id. Concurrent writers therefore never lose each
// other's entries. The package reads only id, parentId and timestamp of an entry and
// keeps every entry byte-for-byte; what the entries mean (Pi's entry types, the
// model's context) is package sessiontree's business.
//
// # Sessions and keys
//
// A TranscriptRef names a session: namespace (tenant or user), agent and session id,
// each validated (ValidatePart). Its segments live under
//
//	{prefix}/{namespace}/{agentId}/{sessionId}/L{level}/{time}-{writerId}-{seq}-{hash}.jsonl.zst
//
// where a Writer supplies writerId and seq, and hash is the xxhash64 of the entries,
// so a key is unique to its writer, sequence and content (ParseKey reads one back).
// A Store bound to a namespace (Config.Namespace) cannot name any other: to it,
// other namespaces do not exist.
//
// # Writing
//
// AppendSegment encodes entries as one level-0 segment and stores it. The
// asynchronous mirror splits that in two: PrepareSegment returns the key and the
// bytes (which the mirror keeps in its outbox), PutSegment stores them later and
// may be repeated: the same bytes under the same key succeed again.
//
// # Reading
//
// ListSegments lists a session's segments; ReadAll fetches and verifies them and
// returns the union of their entries in one order that depends only on the set of
// entries (parents first, then by origin), with conflicts (one id, other bytes)
// reported. Segments that a listed compacted segment names as its inputs are
// skipped without being fetched, and a segment deleted between the listing and the
// fetch makes ReadAll list again. ListNamespaces, ListAgents and ListSessions walk
// the key hierarchy.
//
// # Compaction and garbage collection
//
// Compact merges a level's segments into one segment of the next level that names
// them as its inputs, marks the inputs for deletion (one mark object per compaction
// under the session's gc/ prefix) and deletes marked inputs once their delete delay
// has passed and a superseding segment is verified to hold all their entries.
// cmd/transcript-compact runs it over a whole bucket.
//
// DESIGN.md at the repository root explains the design and the order rules;
// docs/STORAGE.md lists every object the store writes.
package transcript
