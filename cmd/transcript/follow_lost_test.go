package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// TestFollow_StoreLostUnderFollower: a bucket deleted and created again empty
// under a running follow, or its prefix emptied, or a bucket that is gone when
// Pi writes and comes back empty, is filled again with every session (header
// first), the one Pi writes to and one it does not, with no operator action:
// the store again exports each file as it is, and the event stream says why.
func TestFollow_StoreLostUnderFollower(t *testing.T) {
	tests := []struct {
		name string
		// lose empties the store; it returns a func that brings the bucket
		// back, called after Pi's next line.
		lose func(t *testing.T, b *s3bucket.Bucket, name string) (back func())
		// event is what the event stream says.
		event string
		// gone: the bucket is missing when Pi writes: the follower waits for
		// it (a "lost" event) instead of handing the line over.
		gone bool
	}{
		{"bucket deleted and created again", func(t *testing.T, b *s3bucket.Bucket, name string) func() {
			s3test.Empty(t, b)
			require.NoError(t, b.Client().RemoveBucket(t.Context(), name))
			require.NoError(t, b.Client().MakeBucket(t.Context(), name, minioMakeBucket))
			return func() {}
		}, "no longer hold session", false},
		{"prefix emptied", func(t *testing.T, b *s3bucket.Bucket, _ string) func() {
			s3test.Empty(t, b)
			return func() {}
		}, "no longer hold session", false},
		// The follower finds the bucket gone: it hands nothing over (the
		// outbox's lines would land ahead of the header) until it is back,
		// then uploads every file whole.
		{"bucket gone while Pi writes", func(t *testing.T, b *s3bucket.Bucket, name string) func() {
			s3test.Empty(t, b)
			require.NoError(t, b.Client().RemoveBucket(t.Context(), name))
			return func() { require.NoError(t, b.Client().MakeBucket(t.Context(), name, minioMakeBucket)) }
		}, "the store's bucket does not exist", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, b, name := followBucket(t)
			root, rel := piRoot(t)
			file := filepath.Join(root, filepath.FromSlash(rel))
			// idle is a session file Pi does not write to after the loss.
			idle := filepath.Join(root, "--tmp-idle--", "2026-01-01T00-00-00-000Z_idle.jsonl")
			require.NoError(t, os.MkdirAll(filepath.Dir(idle), 0o755))
			require.NoError(t, os.WriteFile(idle, []byte(headerLine("idle")+"\n"+entryLine("i1", "")+"\n"), 0o644))
			exportedAs := func(p, agent, session string) bool {
				want, err := os.ReadFile(p)
				require.NoError(t, err)
				r := cli(t, "export", "--store", store, "--agent", agent, "--session", session)
				return r.code == 0 && r.stdout == string(want)
			}
			exported := func() bool {
				return exportedAs(file, "--tmp-browse--", fixtureV3ID) && exportedAs(idle, "--tmp-idle--", "idle")
			}
			cmd, stdout, stderr := startFollow(t, nil, "--json", "--batch", "20ms", "--rescan", "200ms",
				"--store", store, "--state-dir", t.TempDir(), root)
			waitFor(t, "the first upload", exported)

			uploads := func() int { return strings.Count(stdout.String(), `"event":"uploaded"`) }
			before := uploads()
			back := tt.lose(t, b, name)
			appendEntry(t, file, "after the loss")
			if tt.gone {
				waitFor(t, "the bucket found gone", func() bool { return strings.Contains(stdout.String(), `"event":"lost"`) })
			} else {
				waitFor(t, "the line handed over", func() bool { return uploads() > before })
			}
			back()
			appendEntry(t, file, "later still")
			waitFor(t, "the whole session in the store again", exported)

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, waitExit(t, cmd, 20*time.Second), stderr.String())
			require.Contains(t, stdout.String(), tt.event)
			require.NotContains(t, stdout.String(), `"event":"conflict"`)
			require.True(t, exported(), "the store holds the file as it is")
		})
	}
}

// minioMakeBucket are the options of the buckets the test makes again.
var minioMakeBucket = minio.MakeBucketOptions{Region: "us-east-1"}

// appendEntry appends to the Pi session file p a user message whose parent is
// its last line, as Pi appends one.
func appendEntry(t *testing.T, p, text string) {
	t.Helper()
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var last struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	line, err := json.Marshal(map[string]any{"type": "message", "id": fmt.Sprintf("x%07d", len(lines)), "parentId": last.ID,
		"timestamp": "2026-01-01T00:10:00.000Z", "message": map[string]any{"role": "user", "content": text}})
	require.NoError(t, err)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(append(line, '\n'))
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
