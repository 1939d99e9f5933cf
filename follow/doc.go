// Package follow uploads the session files a running Pi writes, as Pi writes
// them: a Follower watches a directory tree (Pi's sessions root), reads each
// session file's new complete lines and hands them over, one segment per burst,
// to an Uploader (the command wires in the mirror's crash-safe outbox).
//
// A file is a Pi version 3 session file when its name ends in ".jsonl" and its
// first line is a session header; its session is
// {Config.Namespace}/{agent}/{header id}, the agent being Config.Agent or the
// name of the directory that holds the file (both ids mapped by PartName).
// Version 1 and 2 files wait until Pi migrates them (Pi rewrites them in place
// as version 3 when it opens them, giving version 1 entries new random ids), so
// that the store holds only what Pi's file holds afterwards. Other files are
// ignored and reported once. A symbolic link to a directory directly under the
// root is a session folder named after the link, as Pi takes it; links that
// would walk a directory twice are ignored (see Follower.rescan).
//
// Exactly once. The follower keeps a small state file (state.go): per file, the
// bytes of complete lines handed over (the offset), the checksum of those bytes
// and, while a batch is being handed over, an intent. A batch is handed over
// in three steps: the intent is written (fsynced), Upload returns once the
// uploader holds the lines durably, the new offset is written. After a crash,
// a file whose intent is set, or whose bytes no longer match the checksum, or
// that the state does not name, is reconciled: the follower reads what the
// uploader holds of the session, then what the store holds (an entry leaves the
// uploader only once the store has it, so it is found in one or the other) and
// hands over only the lines whose ids neither holds; a held id with other bytes
// is a conflict, reported and not uploaded. So no line is handed over twice and
// none is skipped.
//
// Pi's ways with its files: a torn last line is left until its newline comes;
// Pi's repair (a newline appended to a torn line when it loads the file) makes
// it a complete line that is not an entry, which is skipped, as Pi skips it; a
// complete line over the store's entry limit is skipped too (the store cannot
// hold it) and reported, and the lines after it are uploaded; a file
// rewritten in place (found by its size, inode, header and the bytes before its
// offset) is read again from its start and reconciled; a removed file is
// forgotten (the bucket keeps its session).
//
// A store that lost what was handed over (its bucket deleted and created again
// empty, its prefix deleted) is filled again: before it hands over the next
// lines of a file, the follower asks the uploader, then a Store that is a
// SessionChecker (cheaply: the followmirror adapter HEADs the segment it found
// holding the header), whether either still holds the session with its header;
// when neither does (entries of it without the header do not count), the
// whole file is uploaded again, header first, so that no line goes into a
// session without its header. The store also keeps the follower's marker
// (marker.go: an object of its own, {namespace}/.followers/{id}, asked about
// with one HEAD when the follower starts and each rescan interval): a store
// that lost it was emptied under the follower (its bucket or prefix), and the
// follower asks about every file, so that the sessions of files that do not
// grow come back too (and again now and then for a while after, as an
// emptying may delete the marker before the sessions); a store that still holds it lost only sessions deleted
// on purpose (a retention policy), which are uploaded again only when their
// files grow. Lines handed over while the store could not answer make the
// next read that finds it answering reconcile (and look for the marker), and
// a reconcile that finds entries of the session but no header at all (lines
// an outbox uploaded after the loss) uploads the header and what the session
// lacks (and looks for the marker). A session holding another header stays
// refused. An uploader that is a QueueDropper gives back, before a refill,
// the lines of the session it has not stored yet, which the refill then
// carries behind the header: the store's order stays the file's.
//
// Each follower's marker is its own: the state file records the machine
// (Config.Machine) and the state directory it was written in, and a state
// found elsewhere (a copy) makes the follower take a new id (EventCopied)
// and ask about every file once; Config.FollowerID names the id instead.
package follow
