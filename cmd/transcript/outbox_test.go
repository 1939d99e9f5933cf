package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestCLI_Outbox: `transcript outbox` lists a stuck session of an outbox with its
// error and entries held back, and --release moves its segments back to pending/.
func TestCLI_Outbox(t *testing.T) {
	dir := t.TempDir()
	require.Equal(t, "no stuck sessions\n", ok(t, "outbox", dir))

	// A segment the store refused, as a mirror leaves it in the quarantine.
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(t, err)
	defer store.Close()
	w, err := transcript.NewWriter("r1")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{AgentID: "coder", SessionID: "s1"}
	obj, err := store.PrepareSegment(ref, [][]byte{
		[]byte(`{"type":"custom","id":"a","parentId":null,"customType":"x"}`),
		[]byte(`{"type":"custom","id":"b","parentId":"a","customType":"x"}`),
	}, w)
	require.NoError(t, err)
	failed := filepath.Join(dir, "failed", filepath.FromSlash(obj.Info.Key))
	require.NoError(t, os.MkdirAll(filepath.Dir(failed), 0o755))
	require.NoError(t, os.WriteFile(failed, obj.Data, 0o644))
	reason := filepath.Join(dir, "reasons", filepath.FromSlash(obj.Info.Key))
	require.NoError(t, os.MkdirAll(filepath.Dir(reason), 0o755))
	require.NoError(t, os.WriteFile(reason, []byte("invalid object key: refused\n"), 0o644))

	out := ok(t, "outbox", dir)
	require.Contains(t, out, "default/coder/s1")
	require.Contains(t, out, "invalid object key: refused")
	var stuck []mirror.StuckSession
	require.NoError(t, json.Unmarshal([]byte(ok(t, "outbox", "--json", dir)), &stuck))
	require.Len(t, stuck, 1)
	require.Equal(t, mirror.StuckSession{Session: "default/coder/s1", Error: "invalid object key: refused",
		Segments: 1, Entries: 2, Since: stuck[0].Since}, stuck[0])

	require.Contains(t, ok(t, "outbox", "--release", "default/coder/s1", dir), "1 segments released")
	require.FileExists(t, filepath.Join(dir, "pending", filepath.FromSlash(obj.Info.Key)))
	require.NoFileExists(t, failed)
	require.Equal(t, "no stuck sessions\n", ok(t, "outbox", dir))
}
