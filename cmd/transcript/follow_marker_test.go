package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// followBucket makes a fresh MinIO bucket for a follow test: its store URL
// (prefix p), a client of it and its name, all cleaned up with the test.
func followBucket(t *testing.T) (store string, b *s3bucket.Bucket, name string) {
	t.Helper()
	endpoint, access, secret := s3test.S3Endpoint(t)
	name = fmt.Sprintf("transcript-cli-follow-%d-%d", os.Getpid(), time.Now().UnixNano())
	b, err := s3bucket.New(t.Context(), s3bucket.Config{Endpoint: endpoint, Bucket: name, Region: "us-east-1",
		AccessKey: access, SecretKey: secret, Insecure: true, Create: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		s3test.Empty(t, b)
		require.NoError(t, b.Client().RemoveBucket(context.Background(), name))
		require.NoError(t, b.Close())
	})
	return fmt.Sprintf("s3://%s/p?endpoint=%s&insecure=true&create=true", name, endpoint), b, name
}

// sessionFile writes a Pi session file of session id (a header and one entry)
// in folder agent under root, and returns its path.
func sessionFile(t *testing.T, root, agent, id string) string {
	t.Helper()
	p := filepath.Join(root, agent, "2026-01-01T00-00-00-000Z_"+id+".jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(headerLine(id)+"\n"+entryLine(id+"-1", "")+"\n"), 0o644))
	return p
}

// exportsAs reports whether session default/agent/id of store exports as the
// file p holds.
func exportsAs(t *testing.T, store, p, agent, id string) bool {
	t.Helper()
	want, err := os.ReadFile(p)
	require.NoError(t, err)
	r := cli(t, "export", "--store", store, "--agent", agent, "--session", id)
	return r.code == 0 && r.stdout == string(want)
}

// TestFollow_RetentionIsNotUndone: sessions a retention policy deletes (here
// every session of the store, as --max-age does to a machine whose sessions
// are all old) stay deleted under a running follower while their files stay
// as they are, though the store then holds no session at all; the one Pi
// writes to again comes back whole. The follower's marker, which no deletion
// of sessions touches, is what tells this from an emptied bucket.
func TestFollow_RetentionIsNotUndone(t *testing.T) {
	store, _, _ := followBucket(t)
	root := filepath.Join(t.TempDir(), "sessions")
	active := sessionFile(t, root, "--tmp-a--", "active")
	idle := sessionFile(t, root, "--tmp-a--", "idle")
	cmd, stdout, stderr := startFollow(t, nil, "--json", "--batch", "20ms", "--rescan", "100ms",
		"--store", store, "--state-dir", t.TempDir(), root)
	waitFor(t, "the first upload", func() bool {
		return exportsAs(t, store, active, "--tmp-a--", "active") && exportsAs(t, store, idle, "--tmp-a--", "idle")
	})

	s := openStoreAt(t, store)
	for _, id := range []string{"active", "idle"} {
		require.NoError(t, s.Delete(t.Context(), transcript.TranscriptRef{AgentID: "--tmp-a--", SessionID: id}))
	}
	appendEntry(t, active, "Pi goes on with it")
	waitFor(t, "the session Pi writes to back whole", func() bool { return exportsAs(t, store, active, "--tmp-a--", "active") })
	time.Sleep(500 * time.Millisecond) // five rescans: each looks for the marker

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, waitExit(t, cmd, 20*time.Second), stderr.String())
	r := cli(t, "export", "--store", store, "--agent", "--tmp-a--", "--session", "idle")
	require.NotEqual(t, 0, r.code, "the idle session deleted on purpose stays deleted: %s", r.stdout)
	require.NotContains(t, stdout.String(), `"event":"lost"`)
	require.Contains(t, stdout.String(), `"event":"rewritten"`)
}

// TestFollow_TwoFollowersRefillTheirOwn: two followers (two machines, each
// its own root and state) upload into one bucket, which is emptied while the
// second is stopped. The first fills it again with its sessions; the second,
// started again, finds the store holding sessions but not its own marker, and
// fills in its own sessions too, though their files did not grow.
func TestFollow_TwoFollowersRefillTheirOwn(t *testing.T) {
	store, b, _ := followBucket(t)
	rootA := filepath.Join(t.TempDir(), "sessions")
	rootB := filepath.Join(t.TempDir(), "sessions")
	fileA := sessionFile(t, rootA, "--tmp-a--", "on-a")
	fileB := sessionFile(t, rootB, "--tmp-b--", "on-b")
	stateA, stateB := t.TempDir(), t.TempDir()
	follow := func(root, state string) (stop func() string) {
		cmd, stdout, stderr := startFollow(t, nil, "--json", "--batch", "20ms", "--rescan", "100ms",
			"--store", store, "--state-dir", state, root)
		return func() string {
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 0, waitExit(t, cmd, 20*time.Second), stderr.String())
			return stdout.String()
		}
	}
	onA := func() bool { return exportsAs(t, store, fileA, "--tmp-a--", "on-a") }
	onB := func() bool { return exportsAs(t, store, fileB, "--tmp-b--", "on-b") }
	stopA := follow(rootA, stateA)
	stopB := follow(rootB, stateB)
	waitFor(t, "both uploads", func() bool { return onA() && onB() })
	stopB()

	s3test.Empty(t, b)
	waitFor(t, "the first follower's session back", onA)
	require.False(t, onB())
	stopB = follow(rootB, stateB)
	waitFor(t, "the second follower's session back", onB)
	outB := stopB()
	outA := stopA()
	for _, out := range []string{outA, outB} {
		require.Contains(t, out, `"event":"lost"`)
		require.Equal(t, 1, strings.Count(out, `"event":"lost"`), out)
	}
	require.True(t, onA() && onB())
}
