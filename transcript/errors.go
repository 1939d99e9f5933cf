package transcript

import "errors"

// Sentinel errors of the store, tested with errors.Is. Each meaning has one
// value, declared by the lowest package where it arises; the store's errors also
// wrap those of the packages below it: bucket.ErrNotFound (a session, segment or
// head that does not exist, or lies outside the namespace a store is bound to),
// bucket.ErrExists (CreateSession of a session that exists), bucket.ErrUnavailable
// (the bucket cannot be reached now), pi.ErrInvalidEntry (an entry the store
// cannot keep) and segment's codec errors (segment.ErrCorrupt,
// segment.ErrEntryTooLarge, segment.ErrTooLarge).
var (
	// ErrConflict is wrapped when a write conflicts with what is stored: a head
	// that another writer advanced first (WriteHead, CommitSegment), or, in the
	// packages above, an entry id stored with other bytes. Nothing was written.
	ErrConflict = errors.New("conflict")
	// ErrInvalidHead is wrapped by ReadHead for a head object that does not parse
	// or has an unknown format.
	ErrInvalidHead = errors.New("invalid head object")
)
