package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFollowPi058_KilledAtRandom is TestFollowPi16_KilledAtRandom with Pi 0.58
// (@mariozechner/pi-coding-agent), which many users still run, as the writer:
// its SessionManager writes several sessions at once (a long one, branches,
// compactions, labels, a version 1 file it migrates in place, a branch
// extracted into a new file, a session forked into another cwd) while
// `transcript follow` uploads them to MinIO and is killed with SIGKILL at
// random moments and started again. The bucket must hold every entry of Pi's
// files exactly once, byte for byte, `restore --layout pi` must give the same
// files, and Pi 0.58 must list, resume and open them as the originals (and Pi
// 1.6 open them alike). TRANSCRIPT_FOLLOW_SEED repeats a run.
func TestFollowPi058_KilledAtRandom(t *testing.T) {
	node := needPiPackage(t, "@mariozechner/pi-coding-agent")
	needPiPackage(t, "@earendil-works/pi-coding-agent")
	store := s3Backend().fresh(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TRANSCRIPT_FOLLOW_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("TRANSCRIPT_FOLLOW_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 58))
	agentDir := t.TempDir()
	root := filepath.Join(agentDir, "sessions")
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	harness := exec.CommandContext(ctx, node, "pi058-follow.mjs", "write", strconv.FormatUint(seed%(1<<31), 10), "8")
	harness.Dir = oracleDir
	harness.Env = append(os.Environ(), "PI_CODING_AGENT_DIR="+agentDir)
	var hout, herr bytes.Buffer
	harness.Stdout, harness.Stderr = &hout, &herr
	require.NoError(t, harness.Start())
	written := make(chan error, 1)
	go func() { written <- harness.Wait() }()

	follow := []string{"follow", "--store", store, "--state-dir", state, "--batch", "20ms", "--rescan", "250ms", root}
	kills, writing := 0, true
	for writing || kills < 15 {
		require.NoError(t, ctx.Err(), "after %d kills", kills)
		cmd := exec.Command(binary, follow...)
		cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(10+rng.IntN(600)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		require.NotContains(t, stderr.String(), "stuck", "follower %d", kills)
		kills++
		select {
		case err := <-written:
			require.NoError(t, err, "Pi's harness: %s", herr.String())
			writing = false
		default:
		}
	}
	t.Logf("%d kills", kills)

	res := cliWith(t, cmdOpts{}, append([]string{"follow", "--once", "--json"}, follow[1:]...)...)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	files := requireStoredOnce(t, store, root)
	require.GreaterOrEqual(t, len(files), 9, "six sessions, the migrated one, the branch and the fork")

	restored := t.TempDir()
	res = cliWith(t, cmdOpts{}, "restore", "--layout", "pi", "--out", restored, "--store", store)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	for _, rel := range files {
		want, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(restored, rel))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s restored byte for byte", rel)
	}

	out := filepath.Join(t.TempDir(), "report.json")
	check := exec.CommandContext(ctx, node, "pi058-follow.mjs", "check", root, restored, out)
	check.Dir = oracleDir
	msg, err := check.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var rep struct {
		Folders, Files int
		Mismatches     []json.RawMessage
	}
	require.NoError(t, json.Unmarshal(data, &rep))
	require.Empty(t, rep.Mismatches, "Pi 0.58 (and 1.6) see the restored sessions as the originals")
	require.Equal(t, len(files), rep.Files)
	require.GreaterOrEqual(t, rep.Folders, 6)
}
