package cli_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestEmptySelection: a selection that lists no session is a HiddenError
// (typed: no error string to compare, and no bucket.ErrNotFound, which a reader
// would take for an absent session) naming what was asked and the objects
// named like a key prefix asked for; without such objects, the NotFoundError
// of SelectionNotFound, which names what was asked (not `agent ""` when no
// --agent was given).
func TestEmptySelection(t *testing.T) {
	ctx := t.Context()
	b := membucket.New()
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: "p"})
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
	require.NoError(t, b.Put(ctx, strings.TrimSuffix(s.SessionPrefix(ref), "/"), strings.NewReader("x"), 1, bucket.PutOptions{}))

	tests := []struct {
		f      cli.StoreFlags
		what   string
		hidden []string
	}{
		{cli.StoreFlags{Namespace: "acme"}, `sessions in namespace "acme"`, []string{"p/acme/coder/s1"}},
		{cli.StoreFlags{Namespace: "acme", Agent: "coder"}, `agent "coder" in namespace "acme"`, []string{"p/acme/coder/s1"}},
		{cli.StoreFlags{Namespace: "acme", Agent: "coder", Session: "s1"}, "session acme/coder/s1", []string{"p/acme/coder/s1"}},
		{cli.StoreFlags{Namespace: "acme", Session: "s1"}, `session "s1" in namespace "acme"`, []string{"p/acme/coder/s1"}},
		{cli.StoreFlags{Namespace: "acme", Agent: "coder", Session: "s2"}, "session acme/coder/s2", nil},
		{cli.StoreFlags{Namespace: "acme", Agent: "other"}, `agent "other" in namespace "acme"`, nil},
		{cli.StoreFlags{Namespace: "other"}, `sessions in namespace "other"`, nil},
		{cli.StoreFlags{}, "sessions in any namespace", nil},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			err := tt.f.EmptySelection(ctx, s)
			var hidden *cli.HiddenError
			if tt.hidden == nil {
				require.False(t, errors.As(err, &hidden), err)
				require.ErrorIs(t, err, bucket.ErrNotFound)
				require.EqualError(t, err, tt.what+": not found")
				return
			}
			require.ErrorAs(t, err, &hidden)
			require.NotErrorIs(t, err, bucket.ErrNotFound)
			require.Equal(t, tt.what, hidden.What)
			require.Equal(t, tt.hidden, hidden.Objects)
			require.ErrorContains(t, err, tt.what+": not found (the bucket holds an object named like a key prefix of the store, p/acme/coder/s1, which hides")
		})
	}
}

// TestSessionHidingObject: the object named like a session's key prefix is
// found by name; one named like its agent's does not hide it.
func TestSessionHidingObject(t *testing.T) {
	ctx := t.Context()
	b := membucket.New()
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: "p"})
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
	key, err := cli.SessionHidingObject(ctx, s, ref)
	require.NoError(t, err)
	require.Empty(t, key)
	require.NoError(t, b.Put(ctx, "p/acme/coder", strings.NewReader("x"), 1, bucket.PutOptions{}))
	key, err = cli.SessionHidingObject(ctx, s, ref)
	require.NoError(t, err)
	require.Empty(t, key, "the agent's object does not hide the session's own prefix")
	require.NoError(t, b.Put(ctx, "p/acme/coder/s1", strings.NewReader("x"), 1, bucket.PutOptions{}))
	key, err = cli.SessionHidingObject(ctx, s, ref)
	require.NoError(t, err)
	require.Equal(t, "p/acme/coder/s1", key)
}

// TestNamespaceNotFound_Hidden: a namespace an object named like its key
// prefix hides (p/acme) is no "not found" but a HiddenError naming the
// object; a namespace nothing hides stays a NotFoundError.
func TestNamespaceNotFound_Hidden(t *testing.T) {
	ctx := t.Context()
	b := membucket.New()
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: "p"})
	require.NoError(t, err)
	require.NoError(t, b.Put(ctx, "p/acme", strings.NewReader("x"), 1, bucket.PutOptions{}))

	err = cli.NamespaceNotFound(ctx, s, "acme")
	var hidden *cli.HiddenError
	require.ErrorAs(t, err, &hidden)
	require.Equal(t, []string{"p/acme"}, hidden.Objects)
	require.NotErrorIs(t, err, bucket.ErrNotFound)

	err = cli.NamespaceNotFound(ctx, s, "other")
	var nf *cli.NotFoundError
	require.ErrorAs(t, err, &nf)
	require.ErrorIs(t, err, bucket.ErrNotFound)
}
