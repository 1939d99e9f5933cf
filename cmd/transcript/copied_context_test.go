package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestRead_CopyLostSegment: on a copy of a bucket that lacks a segment in the
// middle of a session, the commands that read one session (cat, export,
// context, tree) answered what was left, silently: context gave the model a
// context that starts after the gap, as if the session began there. Like
// restore, each now prints what it read and warns on stderr, naming the
// missing parent. The exit code stays 0: Pi itself writes such sessions
// (0.58's createBranchedSession), and the bucket cannot tell them apart.

func TestRead_CopyLostSegment(t *testing.T) {
	store, root, s, w := copyStore(t, t.TempDir())
	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: "torn"}
	var lost string
	for k, seg := range [][]string{{headerLine("torn"), messageLine("r", "", "root")}, {messageLine("a", "r", "one")},
		{messageLine("b", "a", "two")}, {messageLine("c", "b", "three")}} {
		info, err := s.AppendSegment(t.Context(), ref, lineBatch(seg), w)
		require.NoError(t, err)
		if k == 2 {
			lost = info.Key
		}
	}
	require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(lost))))
	for _, cmd := range []string{"cat", "export", "context", "tree"} {
		t.Run(cmd, func(t *testing.T) {
			r := cli(t, cmd, "--store", store, "--agent", "coder", "--session", "torn")
			require.Equal(t, 0, r.code, "%s of a session with a lost segment: %s %s", cmd, r.stdout, r.stderr)
			require.Contains(t, r.stderr, cmd+": warning: session default/coder/torn: entries name parents no segment holds")
			require.Contains(t, r.stderr, `"b"`)
			require.Contains(t, r.stdout, "three", "what the store holds is printed")
		})
	}
}
