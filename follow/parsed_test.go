package follow_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// parsedRemote is a remote that takes the links the follower read
// (follow.ParsedUploader), and keeps them for the test.
type parsedRemote struct {
	*remote
	mu    sync.Mutex
	links [][]pi.Links // per UploadParsed, in order
	plain int          // Uploads without links
}

var _ follow.ParsedUploader = (*parsedRemote)(nil)

func (r *parsedRemote) Upload(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte) error {
	r.mu.Lock()
	r.plain++
	r.mu.Unlock()
	return r.remote.Upload(ctx, ref, entries)
}

func (r *parsedRemote) UploadParsed(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte, links []pi.Links) error {
	r.mu.Lock()
	r.links = append(r.links, append([]pi.Links(nil), links...))
	r.mu.Unlock()
	return r.remote.Upload(ctx, ref, entries)
}

// TestFollower_HandsOverLinks: an Uploader that takes links gets, for every
// line handed over, what pi.ParseLinks reads of it, header included, and
// never the lines the follower skipped (a malformed line, one the store
// holds).
func TestFollower_HandsOverLinks(t *testing.T) {
	fx := newFixture(t)
	pr := &parsedRemote{remote: fx.remote}
	fx.tune = func(c *follow.Config) { c.Uploader = pr }
	lines := []string{header("s1"), entry("e1", "", "hi"), `{"type":"message","id":`, entry("e2", "e1", "yo")}
	fx.write(fileA, lines...)
	require.NoError(t, fx.once())
	fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
	require.NoError(t, fx.once())

	want := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"), entry("e3", "e2", "more")}
	requireOnce(t, fx.remote, refOf("s1"), want...)
	require.Zero(t, pr.plain, "every batch went with its links")
	require.Len(t, pr.links, 2)
	var got []pi.Links
	for _, ls := range pr.links {
		got = append(got, ls...)
	}
	require.Len(t, got, len(want))
	for i, line := range want {
		l, err := pi.ParseLinks([]byte(line))
		require.NoError(t, err)
		require.Equal(t, l, got[i], "line %d", i)
	}
	require.Equal(t, "e2", got[3].ParentID)
}
