// Package pi owns the model of a Pi session (Pi session format version 3): the
// entries and the header line, their parsing, the builders of new entries, the one
// JSON writer, the rules of the session tree and the context the model sees. Every
// other package (the local SessionTree, the repository, the commands) answers
// these questions through pi, so each has one answer. pi does no I/O and knows
// nothing of files, buckets or segments.
//
// # Raw bytes
//
// An Entry keeps its raw JSON bytes (one line, without "\n") and the few
// top-level fields the rules read; the store never re-serialises an entry it did
// not create. Migrate, which brings version 1 and 2 files to version 3, is the one
// place that rewrites entries, deterministically.
//
// # Tree rules
//
// Entries come in an order: a file's order, or the merge order of the store, which
// is a function of the set of entries alone (parents before children, then each
// entry's origin: the key of the level-0 segment that first stored it, then its
// position there; see package transcript). Segment key times come from a hybrid
// logical clock per session, never earlier than one tick after the newest key the
// writer has read or written for the session, so "the last entry appended" is the
// causally latest one. On that order:
//
//   - Active leaf (ActiveLeaf): the last entry, unless it is a "leaf" entry. A
//     "leaf" entry moves the active leaf to its targetId (a null targetId makes
//     the leaf null: the empty context). A "leaf" entry whose target is unknown,
//     or is itself a "leaf" entry, changes nothing: the entries before it decide.
//     Applied entry by entry (LeafMoveOf) the rule gives the same answer.
//   - Path (PathTo, PathToRoot): from the root to an entry along parentId; "leaf"
//     entries are never on a path; a missing parent or a cycle ends the walk.
//   - Children and branch points: entries (not "leaf" ones) naming a parent, in
//     order; a branch point has more than one child.
//   - Labels: the last "label" entry per target wins; one without a label clears.
//   - Session name: the last "session_info" entry with a non-empty name.
//   - New ids (NewID): 8 random lowercase hex digits, redrawn on a collision.
//   - Context (BuildContextFrom, BuildContextAt): Pi 1.6's buildSessionContext
//     (system messages, context edits, the system message a compaction
//     recorded; docs/ENTRIES.md lists where Pi 0.x builds another context).
//
// The rules read a []Entry, or any Tree (ActiveLeafOf, ResolveLeafOf, PathOf): a
// reader that does not hold its entries as values (the CLI's lean read of a large
// session) applies the same rules.
//
// # One rule for id and parentId
//
// Every line of a session, an entry or its header, links into the tree by its
// "id" and "parentId" (Links): a non-empty string id; a parentId that is absent,
// null or a string (the empty string and null make a root). Any other parentId
// makes the line invalid (ErrInvalidEntry). ParseEntry, ParseHeader and the
// store's transcript.ParseEntry apply this one rule (ParseLinks, ScanLinks), so a
// line that one of them accepts, the others accept too.
package pi
