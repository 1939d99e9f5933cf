package bucket

import (
	"context"
	"time"
)

// Clock is the clock of a Bucket: the clock that stamps its objects'
// ObjectInfo.ModTime, the server's clock for S3, the local file system's for a
// directory. Ages that decide a deletion (how long ago an object was stored) are
// measured on this clock, so a client whose own clock is wrong cannot make an object
// look older than it is.
type Clock interface {
	// Now returns the bucket's current time.
	Now(ctx context.Context) (time.Time, error)
}
