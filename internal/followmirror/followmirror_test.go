package followmirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/internal/followmirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestUploader_UploadParsedTakesLinks: the links a follower hands over with a
// batch describe the segment the mirror writes (its metadata's last id is the
// links', not a second parse's), and Upload without them parses the lines.
func TestUploader_UploadParsedTakesLinks(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	store, err := transcript.New(transcript.Config{Bucket: membucket.New(), Prefix: "p"})
	require.NoError(t, err)
	defer store.Close()
	u, err := followmirror.Open(store, followmirror.Config{Writer: transcript.NewRandomWriter(), OutboxDir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, u.Close(ctx)) }()
	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "s"}

	lines := [][]byte{
		[]byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-02T03:04:05.678Z","cwd":"/w"}`),
		[]byte(`{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"hi"}}`),
	}
	links := make([]pi.Links, len(lines))
	for i, line := range lines {
		links[i], err = pi.ParseLinks(line)
		require.NoError(t, err)
	}
	links[1].ID = "told"
	require.NoError(t, u.UploadParsed(ctx, ref, lines, links))
	more := []byte(`{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-02T03:04:07.000Z","message":{"role":"user","content":"yo"}}`)
	require.NoError(t, u.Upload(ctx, ref, [][]byte{more}))
	require.NoError(t, u.Await(ctx))

	res, err := store.ReadAll(ctx, ref)
	require.NoError(t, err)
	var last []string
	for _, seg := range res.Segments {
		meta, err := store.ReadSegmentMeta(ctx, seg.Key)
		require.NoError(t, err)
		last = append(last, meta.LastID)
	}
	require.Equal(t, []string{"told", "e2"}, last, fmt.Sprintf("segments %v", res.Segments))
}
