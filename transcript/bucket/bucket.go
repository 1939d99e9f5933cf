// Package bucket defines the small object-storage interface that the transcript store
// is built on, and the errors every backend maps its own failures to.
//
// Backends live in their own packages (membucket, filebucket, s3bucket) and import this
// one, never the reverse. Every backend passes the conformance suite in
// transcript/bucket/buckettest.
//
// Consistency: the store assumes strong read-after-write and list-after-write
// consistency, as MinIO and AWS S3 provide today.
package bucket

import (
	"context"
	"errors"
	"io"
	"time"
)

// Sentinel errors. Backends wrap them (fmt.Errorf("...: %w", ErrNotFound)) so callers
// test with errors.Is.
var (
	// ErrNotFound is returned when a key does not exist (Get, Stat). Delete of a
	// missing key is not an error. It is the one "not found" of every layer above:
	// a segment or session the store does not hold (or that lies outside its
	// namespace), a repository's session that is missing or another owner's, an
	// entry id a tree does not hold all wrap it, so one errors.Is answers for all.
	ErrNotFound = errors.New("not found")
	// ErrExists is returned by Put when the key already exists with other content
	// (a create-only conflict). It is the one "already exists" of the layers
	// above too: creating a session that exists wraps it.
	ErrExists = errors.New("object already exists")
	// ErrInvalidKey is returned for a key the backend cannot store (empty, absolute,
	// with "..", "." or empty path elements, control characters, or too long).
	ErrInvalidKey = errors.New("invalid object key")
	// ErrAccessDenied is returned when the credentials do not allow the request
	// (S3's AccessDenied): a least-privilege role asked for what it may not do.
	ErrAccessDenied = errors.New("access denied")
	// ErrUnavailable is returned when the bucket cannot answer now: it could not
	// be reached (connection refused or reset, name not resolved), took longer
	// than the backend's own request timeout, or said so itself (S3's 503
	// SlowDown or ServiceUnavailable, once the backend's retries are spent). The
	// request may succeed if retried later; the server answers 503 with
	// Retry-After.
	ErrUnavailable = errors.New("bucket unavailable")
	// ErrNoBucket is returned when the bucket itself does not exist (S3's
	// NoSuchBucket): deleted, or not created yet. Unlike ErrNotFound it says
	// that nothing under any key is there, and unlike ErrUnavailable that the
	// server answered; a bucket created again later starts empty.
	ErrNoBucket = errors.New("bucket does not exist")
)

// MetaChecksum is the user-metadata name under which Put records PutOptions.Checksum.
const MetaChecksum = "Transcript-Checksum"

// ObjectInfo describes one object (or, in a delimited listing, one common prefix).
type ObjectInfo struct {
	// Key is the full object key; for a common prefix it ends in "/".
	Key string
	// Size is the object's length in bytes (0 for a prefix).
	Size int64
	// ModTime is when the object was stored (zero for a prefix).
	ModTime time.Time
	// ETag is the backend's entity tag, if it has one.
	ETag string
	// Checksum is the value given as PutOptions.Checksum when the object was created
	// (empty if none, and in listings where the backend does not return metadata).
	Checksum string
	// IsPrefix reports that this is a common prefix of a delimited listing.
	IsPrefix bool
}

// PutOptions tune a create-only Put.
type PutOptions struct {
	// Checksum identifies the content (for example the hex xxhash64 of the bytes).
	// It is stored with the object. When the key already exists and its stored
	// checksum equals this non-empty value, Put treats the call as a retry of the
	// same write and returns nil instead of ErrExists.
	Checksum string
	// ContentType is stored with the object where the backend supports it.
	ContentType string
}

// ListOptions select what List returns.
type ListOptions struct {
	// Prefix limits the listing to keys that start with it.
	Prefix string
	// StartAfter skips every key that sorts at or before it (lexical byte order).
	// In a delimited listing it applies to each returned entry, as S3 and MinIO
	// do: a common prefix is returned only if it sorts after StartAfter, so
	// passing the last returned entry as StartAfter continues a listing.
	StartAfter string
	// Delimited, when true, groups keys that contain "/" after Prefix into one
	// common-prefix ObjectInfo (IsPrefix true, Key ending in "/"), as S3's
	// delimiter "/" does.
	Delimited bool
	// FirstPage, when positive, asks a backend that lists in pages (S3's
	// max-keys) to make its first request for at most this many keys and the
	// rest in full pages. A caller that starts work on each key as it arrives
	// (a read fetching a session's segments) then has its first keys after a
	// short request rather than after a page of a thousand. It changes the
	// requests, never what fn is called with; backends that do not list in
	// pages ignore it.
	FirstPage int
}

// Reader is the read-only half of a bucket.
type Reader interface {
	// Get opens key for reading. A missing key returns an error wrapping ErrNotFound.
	// The caller closes the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
	// Stat returns key's metadata, or an error wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// List calls fn for every key matching opts in ascending lexical byte order.
	// An error from fn stops the listing and is returned as is.
	List(ctx context.Context, opts ListOptions, fn func(ObjectInfo) error) error
	RangeReader
}

// Bucket is a flat key/value object store with create-only writes, and every
// capability the store builds on: ranged reads (RangeReader), batch deletes
// (BatchDeleter), unconditional replacement (Replacer), compare-and-swap writes
// (Conditional) and the clock that stamps objects (Clock).
//
// Every backend implements every method; a backend without a native form of a
// capability implements it with the requests it has and says so in its doc. So a
// capability is never discovered by type assertion, and a wrapper of a bucket
// cannot lose one: wrappers hold the inner bucket in a field rather than embedding
// it, so the compiler asks them for every method, and the conformance suite
// (transcript/bucket/buckettest) runs through each wrapper.
type Bucket interface {
	Reader
	// Put creates key with the first size bytes read from r (size -1: read to EOF).
	// It never overwrites: an existing key gives an error wrapping ErrExists, except
	// that a retry of the same write (equal non-empty PutOptions.Checksum) returns nil.
	// Put is atomic: if r fails, or ctx ends, before all bytes are read, no object is
	// left behind and readers never see a partial object.
	Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) error
	// Delete removes key. Deleting a missing key is not an error (idempotent).
	Delete(ctx context.Context, key string) error
	BatchDeleter
	Replacer
	Conditional
	Clock
}
