package repository_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestSession_StoreLimits: Append stores an entry dated 2300-01-01 and one of 20
// MiB, and refuses one of 70 MiB naming the limit,
// writing nothing; the session keeps taking appends. Default and strict appends
// share the check (parseBatch) and the encoder.
func TestSession_StoreLimits(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, membucket.New())
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{ID: "big"})
	require.NoError(t, err)
	future := []byte(`{"type":"message","id":"future","parentId":null,"timestamp":"2300-01-01T00:00:00.000Z","message":{"role":"user","content":"later"}}`)
	require.NoError(t, s.Append(ctx, future))
	require.NoError(t, s.Append(ctx, msg("large", "future", strings.Repeat("x", 20<<20))))

	before := keys(t, e.bucket, "")
	err = s.Append(ctx, msg("huge", "large", strings.Repeat("y", 70<<20)))
	require.ErrorIs(t, err, repository.ErrInvalid)
	require.ErrorIs(t, err, segment.ErrEntryTooLarge)
	require.ErrorContains(t, err, "64 MiB")
	require.Equal(t, before, keys(t, e.bucket, ""), "a refused append writes nothing")

	require.NoError(t, s.Append(ctx, msg("after", "large", "still flowing")))
	got, err := r.Open(ctx, "big")
	require.NoError(t, err)
	entries, err := got.Entries(ctx)
	require.NoError(t, err)
	require.Subset(t, ids(entries), []string{"future", "large", "after"})
	require.NotContains(t, ids(entries), "huge")
}
