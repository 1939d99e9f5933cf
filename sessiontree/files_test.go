package sessiontree_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// TestFilesOf pins the local layout, which Pi-compatible tools, restore and the
// legacy mirror's keys follow, and checks that a Tree's files are FilesOf's.
func TestFilesOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		root string
		ref  transcript.TranscriptRef
		want string // the files' common stem, "/"-separated
	}{
		{"default namespace", "/var/lib/agent", transcript.TranscriptRef{AgentID: "coder", SessionID: "s1"},
			"/var/lib/agent/default/agents/coder/sessions/s1"},
		{"tenant namespace", "/var/lib/agent", transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"},
			"/var/lib/agent/acme/agents/coder/sessions/s1"},
		{"relative to the root", "", transcript.TranscriptRef{Namespace: "acme", AgentID: "a", SessionID: "s"},
			"acme/agents/a/sessions/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stem := filepath.FromSlash(tc.want)
			want := sessiontree.Files{Context: stem + ".jsonl", Log: stem + ".log.jsonl", Segments: stem + ".segments", Origins: stem + ".origins", Unsent: stem + ".unsent"}
			require.Equal(t, want, sessiontree.FilesOf(tc.root, tc.ref))
			if tc.root == "" {
				return
			}
			tr, err := sessiontree.New(sessiontree.Config{Root: tc.root}, sessiontree.Identity{Namespace: tc.ref.Namespace},
				tc.ref.AgentID, tc.ref.SessionID, sessiontree.HeaderOptions{})
			require.NoError(t, err)
			require.Equal(t, want, sessiontree.Files{Context: tr.ContextPath(), Log: tr.LogPath(), Segments: tr.SegmentsPath(), Origins: tr.OriginsPath(), Unsent: tr.UnsentPath()})
		})
	}
}
