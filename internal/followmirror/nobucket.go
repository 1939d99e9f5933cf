package followmirror

import (
	"context"
	"errors"
	"log/slog"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

var _ follow.BucketWatcher = (*Uploader)(nil)

// BucketMissing returns a channel that receives when one of the mirror's
// uploads failed because the store's bucket does not exist
// (bucket.ErrNoBucket): the follower then takes back what waits in the
// outbox, which would otherwise land ahead of its sessions' headers in the
// bucket created again.
func (u *Uploader) BucketMissing() <-chan struct{} { return u.missing }

// watchHandler passes the mirror's log records on to its handler, and tells
// missing of a record whose error says that the bucket does not exist: the
// mirror reports each failed upload so, and has no other hook.
type watchHandler struct {
	slog.Handler
	missing chan struct{}
}

// Enabled is true: every record is looked at, whatever the level the
// handler it wraps passes on.
func (h watchHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle tells missing of a record holding a bucket.ErrNoBucket, then passes
// the record on when the wrapped handler takes its level.
func (h watchHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, bucket.ErrNoBucket) {
			select {
			case h.missing <- struct{}{}:
			default: // told already
			}
			return false
		}
		return true
	})
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps watching.
func (h watchHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return watchHandler{h.Handler.WithAttrs(as), h.missing}
}

// WithGroup keeps watching.
func (h watchHandler) WithGroup(name string) slog.Handler {
	return watchHandler{h.Handler.WithGroup(name), h.missing}
}
