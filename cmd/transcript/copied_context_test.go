package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// TestRead_CopyLostSegment: on a copy of a bucket that lacks a segment in the
// middle of a session, the commands that read one session (cat, export,
// context, tree) answer what is left, silently and with exit 0: context gives
// the model a context that starts after the gap, as if the session began
// there. Like verify and restore, each should name the missing parent and exit
// 1.
//
// Known to fail (cat.go, tree.go and the export and context commands are not
// owned by the author of this test): set TRANSCRIPT_TEST_KNOWN_READ_GAP=1 to
// run it. Suggested fix: after the read, lostParentsLean (restore_pi.go) of
// the lean result; when it is not empty, write the output anyway, print
// "NAME: entries name parents no segment holds: ..." on stderr and return
// errProblems.
func TestRead_CopyLostSegment(t *testing.T) {
	if os.Getenv("TRANSCRIPT_TEST_KNOWN_READ_GAP") == "" {
		t.Skip("known: reads of a session with a lost segment exit 0; TRANSCRIPT_TEST_KNOWN_READ_GAP=1 runs it")
	}
	root := filepath.Join(t.TempDir(), "copy")
	store := "file://" + root
	b, prefix, err := bucketurl.Open(t.Context(), store)
	require.NoError(t, err)
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	defer s.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: "torn"}
	var lost string
	for k, seg := range [][]string{{headerLine("torn"), messageLine("r", "", "root")}, {messageLine("a", "r", "one")},
		{messageLine("b", "a", "two")}, {messageLine("c", "b", "three")}} {
		batch := make([][]byte, len(seg))
		for i, l := range seg {
			batch[i] = []byte(l)
		}
		info, err := s.AppendSegment(t.Context(), ref, batch, w)
		require.NoError(t, err)
		if k == 2 {
			lost = info.Key
		}
	}
	require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(lost))))
	for _, cmd := range []string{"cat", "export", "context", "tree"} {
		t.Run(cmd, func(t *testing.T) {
			r := cli(t, cmd, "--store", store, "--agent", "coder", "--session", "torn")
			require.Equal(t, 1, r.code, "%s of a session with a lost segment: %s %s", cmd, r.stdout, r.stderr)
			require.Contains(t, r.stderr, `"b"`)
		})
	}
}
