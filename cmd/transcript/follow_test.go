package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// piRoot makes a Pi sessions root holding the version 3 fixture in its folder,
// and a file of another program; it returns the root and the fixture's path
// relative to it.
func piRoot(t *testing.T) (root, rel string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "sessions")
	rel = "--tmp-browse--/2026-01-01T00-00-00-000Z_" + fixtureV3ID + ".jsonl"
	data, err := os.ReadFile(fixtureV3)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "--tmp-browse--"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.txt"), []byte("not a session\n"), 0o644))
	return root, rel
}

// TestFollow_Once: follow --once uploads a root's session files and exits; run
// again it uploads nothing; the session exports as the file; files of other
// programs are reported on stderr.
func TestFollow_Once(t *testing.T) {
	for _, b := range []backend{fileBackend(), s3Backend()} {
		t.Run(b.name, func(t *testing.T) {
			root, rel := piRoot(t)
			store, state := b.fresh(t), t.TempDir()
			args := []string{"follow", "--once", "--store", store, "--state-dir", state, root}
			r := cli(t, args...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "followed 1 session file under "+root+": ")
			require.Contains(t, r.stdout, "in 1 segment uploaded")
			require.Contains(t, r.stderr, "follow: ignored: README.txt: not a .jsonl file")
			before := b.snapshot(t, store)

			r = cli(t, args...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "0 entries in 0 segments uploaded")
			require.Equal(t, before, b.snapshot(t, store), "nothing new: the store is unchanged")

			want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			require.NoError(t, err)
			got := ok(t, "export", "--store", store, "--agent", "--tmp-browse--", "--session", fixtureV3ID)
			require.Equal(t, string(want), got)
		})
	}
}

// TestFollow_Errors: usage errors exit 2; a missing root with --once is "not
// found" (exit 1).
func TestFollow_Errors(t *testing.T) {
	store := "file://" + t.TempDir()
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"follow", "--once", "--store", store, "--session", "s1", t.TempDir()}, 2, "each file names its session"},
		{[]string{"follow", "--once", "--store", store, "a", "b"}, 2, "at most one ROOT"},
		{[]string{"follow", "--once", "--store", store, "--batch", "0s", t.TempDir()}, 2, "must be positive"},
		{[]string{"follow", "--once", "--store", store, "--agent", "../x", t.TempDir()}, 2, "--agent"},
		{[]string{"follow", "--once", "--store", store, "--follower-id", "a b", t.TempDir()}, 2, "--follower-id"},
		{[]string{"follow", "--once", "--store", store, "--follower-id", "", t.TempDir()}, 2, "--follower-id is empty"},
		{[]string{"follow", "--once", "--store", store, "--state-dir", t.TempDir(), filepath.Join(t.TempDir(), "none")}, 1, "not found"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:3], " "), func(t *testing.T) {
			r := cli(t, tt.args...)
			require.Equal(t, tt.code, r.code, r.stderr)
			require.Contains(t, r.stderr, tt.msg)
		})
	}
}

// TestFollow_SIGTERM: a running follow uploads lines as they are written,
// serves its metrics, and on SIGTERM uploads what it has and exits 0.
func TestFollow_SIGTERM(t *testing.T) {
	root, rel := piRoot(t)
	store, state := "file://"+t.TempDir(), t.TempDir()
	addr := "127.0.0.1:" + freePort(t)
	cmd := exec.Command(binary, "follow", "--store", store, "--state-dir", state, "--batch", "10ms", "--metrics-addr", addr, root)
	cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()

	entries := func() int {
		r := cli(t, "cat", "--store", store, "--agent", "--tmp-browse--", "--session", fixtureV3ID)
		return strings.Count(r.stdout, "\n")
	}
	waitFor(t, "the fixture uploaded", func() bool { return entries() > 1 })
	n := entries()
	f, err := os.OpenFile(filepath.Join(root, filepath.FromSlash(rel)), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(entryLine("after-1", "") + "\n")
	require.NoError(t, err)
	waitFor(t, "the appended line uploaded", func() bool { return entries() == n+1 })

	// The follower counts a batch, and takes the file's lag, after the mirror
	// accepted it into its outbox, and the mirror's worker may have stored it
	// (which entries sees) before then: the metrics are polled, within the bound
	// of waitFor, until they show the second batch handed over.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if !assert.NoError(c, err) {
			return
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		assert.Equal(c, http.StatusOK, resp.StatusCode)
		var series []string // this program's, without the Go and process metrics
		for line := range strings.Lines(string(data)) {
			if strings.HasPrefix(line, "transcript_") {
				series = append(series, strings.TrimSpace(line))
			}
		}
		metrics := strings.Join(series, "\n")
		for _, m := range []string{"transcript_follow_lines_total", "transcript_follow_segments_total 2", "transcript_follow_lag_bytes 0",
			"transcript_follow_stuck_files 0", `transcript_follow_files{state="following"} 1`, "transcript_mirror_pending_segments"} {
			assert.Contains(c, metrics, m)
		}
	}, 20*time.Second, 20*time.Millisecond, "the metrics after the second batch")

	_, err = f.WriteString(entryLine("after-2", "") + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	require.Equal(t, n+2, entries(), "the last line went up on SIGTERM")
	require.Contains(t, stdout.String(), "0 segments left in the outbox")
}

// waitFor polls cond every 20 ms for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
