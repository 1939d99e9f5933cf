package main

import (
	"context"
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
	dir := emptyOutbox(t)
	require.Equal(t, "no stuck sessions\n", ok(t, "outbox", dir))
	require.Empty(t, ok(t, "outbox", "--json", dir), "no stuck sessions: no JSON lines")

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
	var stuck mirror.StuckSession
	require.NoError(t, json.Unmarshal([]byte(ok(t, "outbox", "--json", dir)), &stuck), "one JSON object per line")
	require.Equal(t, mirror.StuckSession{Session: "default/coder/s1", Error: "invalid object key: refused",
		Segments: 1, Entries: 2, Since: stuck.Since}, stuck)

	require.Equal(t, "default/coder/s1\t1 segment released\n", ok(t, "outbox", "--release", "default/coder/s1", dir))
	require.FileExists(t, filepath.Join(dir, "pending", filepath.FromSlash(obj.Info.Key)))
	require.NoFileExists(t, failed)
	require.Equal(t, "no stuck sessions\n", ok(t, "outbox", dir))
}

// emptyOutbox returns the outbox directory of a mirror that ran and stopped with
// nothing left to upload.
func emptyOutbox(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(t, err)
	defer store.Close()
	m, err := mirror.New(mirror.Config{Store: store, Writer: transcript.NewRandomWriter(), OutboxDir: dir})
	require.NoError(t, err)
	require.NoError(t, m.Close(context.Background()))
	return dir
}

// TestCLI_OutboxNotFound: outbox never answers "all clear" for what is not an
// outbox, never creates anything, and says "not found" (exit 1) or names the
// usage error (exit 2).
func TestCLI_OutboxNotFound(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope-outbox")
	plain := t.TempDir() // a directory, but no outbox
	outbox := emptyOutbox(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"list a missing directory", []string{"outbox", missing}, 1, "outbox " + missing + ": not found (no such directory)"},
		{"list a directory that is no outbox", []string{"outbox", "--json", plain}, 1, "outbox " + plain + ": not found (the directory holds no LOCK, journal/, pending/ or failed/ of a mirror)"},
		{"release in a missing directory", []string{"outbox", "--release", "default/a/s", missing}, 1, "outbox " + missing + ": not found"},
		{"release in a directory that is no outbox", []string{"outbox", "--release", "default/a/s", plain}, 1, "not found (the directory holds no LOCK"},
		{"release a malformed session", []string{"outbox", "--release", "bad", outbox}, 2, `--release "bad": want namespace/agent/session`},
		{"release a bad id", []string{"outbox", "--release", "default/../s", outbox}, 2, `--release "default/../s": invalid`},
		{"release a session that is not stuck", []string{"outbox", "--release", "default/a/s", outbox}, 1,
			"stuck session default/a/s in outbox " + outbox + ": not found (it has no quarantined segments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[string]string{}
			for _, d := range []string{plain, outbox} {
				before[d] = hashTree(t, d)
			}
			r := cli(t, tt.args...)
			require.Equal(t, tt.code, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
			require.Empty(t, r.stdout)
			require.Contains(t, r.stderr, tt.stderr)
			require.NoDirExists(t, missing)
			for d, h := range before {
				require.Equal(t, h, hashTree(t, d), "%s is unchanged", d)
			}
		})
	}
}
