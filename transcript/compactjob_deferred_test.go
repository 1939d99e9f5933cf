package transcript_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// onListBucket calls the function in before, once, ahead of the first listing of
// exactly the prefix in at.
type onListBucket struct {
	bucket.Bucket
	at     string
	before atomic.Pointer[func()]
}

func (b *onListBucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if opts.Prefix == b.at {
		if f := b.before.Swap(nil); f != nil {
			(*f)()
		}
	}
	return b.Bucket.List(ctx, opts, fn)
}

// A session a policy selects that gets a segment between the decision's listing
// and its own listing (a write, or another worker's compaction) is left for the
// next run. Retain must say so (RetentionDeferred, with the policy's reason),
// not report it as a session no policy selects: the job's summary then had
// sessions examined that no count accounted for, and on a bucket that other
// workers compact, half the sessions retention selected went unexplained.
func TestCompactJob_RetentionDeferredIsReported(t *testing.T) {
	ctx := context.Background()
	b := &onListBucket{Bucket: membucket.New()}
	s := newStore(t, b, transcript.Config{Prefix: "p"})
	w := newWriter(t, "replica-a")
	old := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "old"}
	ids := appendChain(t, s, old, w, "o", "", 1)
	appendChain(t, s, transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "new"}, w, "n", "", 1)
	b.at = s.SessionPrefix(old)
	write := func() { appendChain(t, s, old, w, "late", ids[0], 1) }
	b.before.Store(&write)

	r := transcript.Retention{Rules: []transcript.RetentionRule{{Namespace: "*", Agent: "*", Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
	got := map[string]transcript.RetentionResult{}
	require.NoError(t, s.Retain(ctx, "acme", "", &r, transcript.RetentionOptions{DeleteDelay: transcript.DeleteAtOnce},
		func(res transcript.RetentionResult, err error) {
			require.NoError(t, err)
			got[res.Ref.SessionID] = res
		}))
	require.Equal(t, transcript.RetentionDeferred, got["old"].Action)
	require.Equal(t, "deferred", got["old"].Action.String())
	require.Equal(t, "keep-last 1: number 2 by last write", got["old"].Reason)
	require.Equal(t, transcript.RetentionKept, got["new"].Action)
	require.NotEmpty(t, sessionKeys(t, s, old), "kept (its segments have no Pi header: SessionExists says no session)")
}
