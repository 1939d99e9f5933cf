// Package repository keeps the sessions of one owner in the transcript store, with
// the semantics of Pi's SessionRepository: create, open, list, fork and delete
// sessions, append entries idempotently, watch other writers' entries, and rewind.
//
// # Owners
//
// A Repository is bound to one trusted Owner (tenant and user, as the runtime
// authenticated them). Its sessions live in the owner's namespace (see
// Owner.Namespace, an injective escaping of tenant and user) through a
// transcript.Store bound to that namespace, so the repository cannot even name
// another owner's keys: another owner's session is not found, on every call, with
// the same error as a session that never existed. Session ids and names are
// validated (ValidateID, ValidateName).
//
// # Sessions
//
// A session is the union-merge of its segments. Create stores Pi's "session"
// header line (type "session", version 3, id, timestamp, cwd, parentSession) as
// the first entry of the first segment, exactly as a SessionTree's first flush
// does, so a SessionTree, the CLI and Export all find it; a name is a
// "session_info" entry. Fork copies the path to an entry into a new session whose
// header names the source as parentSession. Delete removes every object of the
// session.
//
// Append is idempotent by entry id: the same id with the same bytes succeeds
// without writing (a retry), with other bytes it fails with transcript.ErrConflict and writes
// nothing.
//
// # Strict mode
//
// By default concurrent appends all succeed and become sibling branches. A session
// created with CreateOptions.Strict keeps a head object, HEAD.json under the
// session prefix (transcript.Head, transcript.HeadName), naming the head entry and
// the committed segments in commit order. An append writes its segment
// (create-only) and then advances the head with a conditional write (If-Match on
// the head's ETag: transcript.Store.CommitSegment); an append whose expected head
// is stale fails with transcript.ErrConflict and ErrStaleHead and commits
// nothing. Of N writers appending at one head, exactly one wins. Strict readers see only the segments the head names; the
// losers' segments are deleted at once, and CollectUncommitted removes those a
// crash left behind. On open, the head replayed from the committed entries (each
// entry moves the head to itself, a "leaf" entry to its targetId) must equal the
// stored head, or appends are refused with ErrHeadMismatch.
//
// # Watch and rewind
//
// Session.Watch polls the store and delivers entries other writers committed.
// Session.ContextAt returns the entries and the model context as of an earlier
// entry; Repository.OpenAsOf opens the session as it was at a point in time, from
// the creation times in its segment keys.
//
// # Costs
//
// An append lists the session's segments (default mode) or reads the head (strict
// mode) and reads only segments this handle has not seen; a strict append adds one
// conditional PUT. Open reads the session whole (a compacted strict session: the
// head and the few segments it names, no LIST); a handle brings itself up to date
// with what is new (Session.Refresh) and serves pages of its sequence without I/O
// (Session.Page): in strict mode the commit order, which appends extend and a
// compaction leaves as it was, in default mode the merge order, which a late
// segment can reorder (the page's Epoch then changes). List reads every session whole; ListPage reads one summary per
// session (a strict head, or a default-mode session's cached SUMMARY.json).
//
// # Limits
//
// Compaction (transcript.Store.Compact, cmd/transcript-compact) compacts strict
// sessions through their head: it merges committed segments and commits the output
// by a conditional write of the head (an append that loses only to it commits again
// on the new head), and deletes segments no head commits once old enough, as
// CollectUncommitted does. Strict sessions must be written only through a Repository (a SessionTree's
// mirror bypasses the head, so its segments stay uncommitted).
package repository
