package repository_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestDeletedUnderAnOpenHandle: a default-mode session deleted while another
// replica's append was in flight holds only that append's segment, which has no
// header: it is no session (see Delete). A handle that held the session before
// the delete must find it gone, on its next append and on its next refresh,
// rather than take the late segment as news and go on serving the session it
// holds in memory: before, that replica answered every later append as
// committed (and served the session) while every other one said not found.
func TestDeletedUnderAnOpenHandle(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEnv(t, be.new(t))
			a, b := e.repo(alice), e.repo(alice)
			s, err := a.Create(ctx, repository.CreateOptions{ID: "s"})
			require.NoError(t, err)
			require.NoError(t, s.Append(ctx, msg("u1", "", "one")))
			held, err := b.Open(ctx, "s")
			require.NoError(t, err)

			require.NoError(t, a.Delete(ctx, "s"))
			// The segment of an append that was in flight during the delete.
			_, err = e.store.AppendSegment(ctx, held.Ref(), [][]byte{msg("u2", "u1", "late")}, transcriptWriter(t, "late"))
			require.NoError(t, err)

			require.ErrorIs(t, held.Append(ctx, msg("u3", "u2", "after")), bucket.ErrNotFound)
			require.ErrorIs(t, held.Refresh(ctx), bucket.ErrNotFound)
			_, err = a.Open(ctx, "s")
			require.ErrorIs(t, err, bucket.ErrNotFound)
		})
	}
}
