package followmirror_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/followmirror"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestUploader_RetentionMarked: the follower's store adapter finds the mark
// a retention run leaves on a session it will delete, and none on a session
// it keeps, nor once the session is deleted.
func TestUploader_RetentionMarked(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The sessions' keys bear the times of now: "old" is written an hour
	// before "new".
	var now atomic.Int64
	now.Store(time.Now().Add(-2 * time.Hour).UnixNano())
	store, err := transcript.New(transcript.Config{Bucket: membucket.New(), Prefix: "p",
		Now: func() time.Time { return time.Unix(0, now.Load()) }})
	require.NoError(t, err)
	defer store.Close()
	up, err := followmirror.Open(store, followmirror.Config{Writer: transcript.NewRandomWriter(), OutboxDir: t.TempDir(), Workers: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, up.Close(ctx)) }()
	ref := func(id string) transcript.TranscriptRef {
		return transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "--w--", SessionID: id}
	}
	for _, id := range []string{"old", "new"} {
		require.NoError(t, up.Upload(ctx, ref(id), [][]byte{[]byte(`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-02T03:04:05.678Z","cwd":"/w"}`)}))
		require.NoError(t, up.Await(ctx))
		now.Add(int64(time.Hour))
	}
	retain := func(opts transcript.RetentionOptions) {
		t.Helper()
		r := &transcript.Retention{Rules: []transcript.RetentionRule{{Agent: "--w--", Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
		require.NoError(t, store.Retain(ctx, transcript.DefaultNamespace, "--w--", r, opts, func(_ transcript.RetentionResult, err error) { require.NoError(t, err) }))
	}
	retain(transcript.RetentionOptions{})
	for id, want := range map[string]bool{"old": true, "new": false} {
		marked, err := up.RetentionMarked(ctx, ref(id))
		require.NoError(t, err)
		require.Equal(t, want, marked, id)
	}
	retain(transcript.RetentionOptions{DeleteDelay: time.Nanosecond})
	exists, err := up.SessionExists(ctx, ref("old"))
	require.NoError(t, err)
	require.False(t, exists, "retention deleted it")
	marked, err := up.RetentionMarked(ctx, ref("old"))
	require.NoError(t, err)
	require.False(t, marked)
}
