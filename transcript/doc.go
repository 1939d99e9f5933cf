// Package transcript stores session transcripts as immutable segments in a bucket and
// reads them back by union-merge.
//
// Every flush of a session becomes one new segment object that nobody overwrites
// (create-only PUT); readers list a session's segments, fetch them in parallel, verify
// them and merge their entries by id. Concurrent writers therefore never lose each
// other's entries. The package reads only id, parentId and timestamp of an entry and
// keeps every entry byte-for-byte; what the entries mean (Pi's entry types, the
// tree rules, the model's context) is package pi's business.
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
// reported. A compacted segment's claim to supersede its inputs hides nothing that
// still exists: inputs that are still listed are read too and their entries collapse
// with the compacted copies (a forged claim therefore costs readers nothing, and an
// honest one costs the inputs' GETs until their delete delay ends). A segment deleted
// between the listing and the fetch makes ReadAll list again. ReadNew reads only the
// segments a reader does not hold yet, for readers that sync often; it usually lists
// only the level-0 keys after the newest one the reader holds (less a margin) and the
// compacted segments, and lists the whole session from time to time
// (ReconcilePolicy), because key time never proves that nothing older is missing.
// ReadLean is ReadAll held lean (segment bodies and a few integers per entry) for
// very large sessions; ReadSegment and ReadSegmentMeta read one segment, or only its
// metadata frame. A View is a store that sees only the segments a filter keeps.
// ListNamespaces, ListAgents and ListSessions walk the key hierarchy.
//
// # Strict sessions
//
// A strict session has a head object (Head, under HeadName) that names its head
// entry and the segments committed so far, and only a conditional write moves it:
// CreateSession stores a session's first segment and its head, CommitSegment a
// segment and the head that commits it, so that of writers committing from one
// head exactly one wins (the others get ErrConflict); readers of the session read
// the segments the head names (ReadCommitted, or ReadLeanCommitted held lean), and
// a reader of whole sessions tells a strict one from the listing it reads anyway
// (ListSegmentsHead, Listed.HeadListed). Compact compacts a strict session
// through the same conditional write, replacing the names of the segments it merged
// by its output's, so the head stays O(levels) in size; the head also carries the
// session's Summary. Package repository builds strict mode on these operations.
//
// # Order rule
//
// The merged order is a function of the set of entries, the same on every replica,
// under every compaction and every listing order. Each entry has an origin (Origin):
// the key of the level-0 segment that first stored it, relative to the session, and
// its position there; compacted segments record the origin of every entry they hold
// (segment format version 2). The merge places parents before children and, among
// entries whose parents are placed, the earliest origin first (origin keys compare
// by their name, so by key time first, then writer, sequence and hash; then the
// position). Of two versions of one id (a conflict) the one with the earliest origin
// wins everywhere; compaction keeps the loser, with its origin, after the winners. A
// version 1 compacted segment, which records no origins, gives its entries its first
// input as origin key and their position in it. The active leaf is then the last
// entry of that order unless a "leaf" entry moves it (package pi).
//
// # Clock rule
//
// The time in a segment key comes from a hybrid logical clock per session (Clock):
// never earlier than one ClockTick after the newest key time the store has read
// (every listing feeds the clock) or written for that session, otherwise the wall
// clock. A writer that has seen a segment therefore writes a key that sorts after
// it, whatever its wall clock says, and "the active leaf is the last entry
// appended" means the causally latest entry. Key times are never used for ages or
// completeness: ages come from the bucket's own LastModified and clock, and a
// segment can still land late with an older key.
//
// # Compaction and garbage collection
//
// Compact merges a level's segments into the next level, naming them as its inputs:
// one segment, or, when the merged JSONL exceeds the target segment size
// (segment.DefaultTargetSegmentSize, 64 MiB), a group of parts of one level, each
// naming every input and its place in the group (segment.Group). It marks the inputs
// for deletion (one mark object per compaction under the session's gc/ prefix) and
// deletes marked inputs once their delete delay has passed and the superseding output
// is verified, right then, to be whole (every part of its group exists and decodes)
// and to hold all their entries. A group that is not whole claims nothing: readers
// and the compactor treat its inputs as unsuperseded, and the parts of one whole group
// count as one segment toward the next compaction.
// cmd/transcript-compact runs it over a whole bucket.
//
// DESIGN.md at the repository root explains the design and the order rules;
// docs/STORAGE.md lists every object the store writes.
package transcript
