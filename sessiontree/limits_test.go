package sessiontree_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestTree_StoreLimits: an entry the store can hold is accepted and uploaded
// whatever its timestamp (2300-01-01 lies beyond int64 nanoseconds) or size (20
// MiB); one it cannot hold (70 MiB) is refused by Append, naming the limit, and
// leaves nothing pending, so the session's later flushes still upload.
func TestTree_StoreLimits(t *testing.T) {
	ctx := t.Context()
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(t, err)
	defer store.Close()
	w, err := transcript.NewWriter("limits")
	require.NoError(t, err)
	cfg := testConfig(t)
	cfg.Uploader = &mirror.Direct{Store: store, Writer: w}
	tr, err := sessiontree.New(cfg, sessiontree.Identity{}, "agent", "limits", sessiontree.HeaderOptions{})
	require.NoError(t, err)

	first, err := tr.AppendMessage(json.RawMessage(`{"role":"user","content":"hi"}`))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))

	future := fmt.Appendf(nil, `{"type":"message","id":"future","parentId":%q,"timestamp":"2300-01-01T00:00:00.000Z","message":{"role":"user","content":"later"}}`, first.ID())
	_, err = tr.AppendRaw(future)
	require.NoError(t, err)
	big, err := tr.AppendMessage(json.RawMessage(`{"role":"toolResult","content":"` + strings.Repeat("x", 20<<20) + `"}`))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))

	n := tr.Len()
	huge := `{"role":"toolResult","content":"` + strings.Repeat("y", 70<<20) + `"}`
	_, err = tr.AppendMessage(json.RawMessage(huge))
	require.ErrorIs(t, err, segment.ErrEntryTooLarge)
	require.ErrorIs(t, err, pi.ErrInvalidEntry)
	require.ErrorContains(t, err, "64 MiB")
	_, err = tr.AppendRaw(fmt.Appendf(nil, `{"type":"custom","id":"huge","parentId":null,"data":%q}`, strings.Repeat("z", 70<<20)))
	require.ErrorIs(t, err, segment.ErrEntryTooLarge)
	require.Equal(t, n, tr.Len(), "nothing refused is buffered")

	after, err := tr.AppendMessage(json.RawMessage(`{"role":"user","content":"still flowing"}`))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))

	res, err := store.ReadAll(ctx, tr.Ref())
	require.NoError(t, err)
	got := map[string]int{}
	for _, e := range res.Entries {
		got[e.ID] = len(e.Raw)
	}
	for _, id := range []string{first.ID(), "future", big.ID(), after.ID()} {
		require.Contains(t, got, id, "entry %s uploaded", id)
	}
	require.Greater(t, got[big.ID()], 20<<20)
	require.NotContains(t, got, "huge")
}
