package repository_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestDelete_LeftoversOnly: an id that holds only segments without the
// session's header (an append that raced a delete) is no session, so DELETE
// answers not found, and it removes them: nothing is left under the id, and a
// create of it starts empty.
func TestDelete_LeftoversOnly(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEnv(t, be.new(t))
			a := e.repo(alice)
			s, err := a.Create(ctx, repository.CreateOptions{ID: "s"})
			require.NoError(t, err)
			ref := s.Ref()
			require.NoError(t, a.Delete(ctx, "s"))
			_, err = e.store.AppendSegment(ctx, ref, [][]byte{msg("u2", "u1", "late")}, transcriptWriter(t, "late"))
			require.NoError(t, err)

			require.ErrorIs(t, a.Delete(ctx, "s"), bucket.ErrNotFound)
			var left []string
			require.NoError(t, e.bucket.List(ctx, bucket.ListOptions{Prefix: e.store.SessionPrefix(ref)}, func(oi bucket.ObjectInfo) error {
				left = append(left, oi.Key)
				return nil
			}))
			require.Empty(t, left, "the leftovers are deleted")
			require.ErrorIs(t, a.Delete(ctx, "s"), bucket.ErrNotFound)
		})
	}
}
