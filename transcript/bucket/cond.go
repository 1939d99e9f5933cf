package bucket

import (
	"context"
	"errors"
	"io"
)

// ErrPreconditionFailed is returned (wrapped) by Conditional.PutIf when its condition
// does not hold: the object's ETag is not Cond.IfMatch (or the object is missing), or
// the object exists although Cond.IfNoneMatch was set. Nothing was written.
var ErrPreconditionFailed = errors.New("precondition failed")

// Cond is the condition of a Conditional.PutIf. Exactly one field must be set.
type Cond struct {
	// IfMatch writes only if the object exists and its ETag equals IfMatch (S3's
	// "If-Match"), so that a read-modify-write based on an ETag fails instead of
	// overwriting a newer version.
	IfMatch string
	// IfNoneMatch writes only if the object does not exist (S3's "If-None-Match: *").
	IfNoneMatch bool
}

// Validate returns an error unless exactly one field of c is set.
func (c Cond) Validate() error {
	if (c.IfMatch != "") == c.IfNoneMatch {
		return errors.New("conditional put: set exactly one of IfMatch and IfNoneMatch")
	}
	return nil
}

// Conditional is the compare-and-swap of a Bucket: replacing an object only while it
// is the version the caller read, by its ETag. The segment
// store does not need it (segments are create-only); a small mutable object such as
// a session's head pointer does.
//
// The contract, checked by the conformance suite in transcript/bucket/buckettest:
//   - GetWithETag returns the whole object and the ETag of exactly those bytes; a
//     missing key gives an error wrapping ErrNotFound. It is meant for small objects.
//   - PutIf writes the object atomically (readers see the old or the new bytes,
//     never a mix) if and only if cond holds at the moment of the write, and returns
//     the new ETag. When it does not hold, nothing is written and the error wraps
//     ErrPreconditionFailed. Of N concurrent PutIf calls with the same IfMatch,
//     exactly one succeeds.
//   - ETags are opaque strings that change whenever the bytes change; equal bytes
//     may give equal ETags (S3 uses the MD5 of a single-PUT object), so callers that
//     must never see an ABA write put a version counter in the object.
//   - When key already holds exactly the bytes being written, PutIf may return
//     success although cond does not hold: a client that retries a request whose
//     response was lost cannot tell its own first attempt from another writer's
//     identical object (s3bucket). Callers that need to know who won write
//     something unique in each version.
//   - PutIf is as atomic as Put when r fails or ctx ends: nothing is left behind.
//   - Objects written by PutIf are ordinary objects for Get, Stat, List and Delete.
//     A Delete is not conditional: a Delete racing a PutIf may be undone by it on
//     backends without server-side conditions (see each backend's doc).
//   - Backends without server-side conditions decide the condition under a lock of
//     their own (membucket: a mutex; filebucket: a lock file), which holds only
//     among the processes that share it.
type Conditional interface {
	// GetWithETag reads key whole and returns its bytes and their ETag.
	GetWithETag(ctx context.Context, key string) ([]byte, string, error)
	// PutIf writes key from the first size bytes of r (size -1: to EOF) if cond
	// holds, and returns the ETag of the written object.
	PutIf(ctx context.Context, key string, r io.Reader, size int64, cond Cond) (string, error)
}

// ChangeReader is implemented by buckets that can answer a read of an object
// the caller already holds without sending its bytes again: S3's GET with
// "If-None-Match: <etag>", answered 304 Not Modified (s3bucket). A head read
// that finds nothing new then costs the server no read of the object and the
// network no copy of it. Use GetIfChanged, which falls back on GetWithETag.
type ChangeReader interface {
	// GetIfChanged is GetWithETag of key, except that while key's ETag is
	// still etag it returns no bytes, etag and changed false.
	GetIfChanged(ctx context.Context, key, etag string) (data []byte, newETag string, changed bool, err error)
}

// GetIfChanged reads key unless its ETag is still etag (then it returns no
// bytes, etag and changed false), with b's own GetIfChanged when b is a
// ChangeReader and otherwise with GetWithETag and a comparison of the ETags.
// An empty etag always reads.
func GetIfChanged(ctx context.Context, b Conditional, key, etag string) ([]byte, string, bool, error) {
	if cr, ok := b.(ChangeReader); ok && etag != "" {
		return cr.GetIfChanged(ctx, key, etag)
	}
	data, got, err := b.GetWithETag(ctx, key)
	if err != nil {
		return nil, "", false, err
	}
	if etag != "" && got == etag {
		return nil, etag, false, nil
	}
	return data, got, true, nil
}
