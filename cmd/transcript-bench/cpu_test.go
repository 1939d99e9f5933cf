package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/rusage"
)

// burn spends at least d of this process's CPU time, on the calling goroutine.
func burn(t *testing.T, d time.Duration) {
	start, err := rusage.SelfCPU()
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		sum := sha256.Sum256(buf)
		buf[0] = sum[0]
		if now, err := rusage.SelfCPU(); err == nil && now-start >= d {
			return
		}
	}
}

// TestMediansCPU: the CPU of a call that burns CPU shows in its cost, and not
// in the cost of one that sleeps beside it; with a server PID (this process,
// read through /proc as another), the server's time shows too.
func TestMediansCPU(t *testing.T) {
	m := cpuMeter{}
	if runtime.GOOS == "linux" {
		m.serverPID = os.Getpid()
	}
	ds, costs, err := mediansCPU(3, m,
		func() error { burn(t, 100*time.Millisecond); return nil },
		func() error { time.Sleep(10 * time.Millisecond); return nil })
	require.NoError(t, err)
	require.Len(t, ds, 2)
	require.Len(t, costs, 2)
	require.GreaterOrEqual(t, ds[1], 10*time.Millisecond)
	burnt, slept := costs[0], costs[1]
	require.True(t, burnt.HasSelf)
	require.GreaterOrEqual(t, burnt.Self, 100*time.Millisecond)
	require.Less(t, slept.Self, burnt.Self/2, "a sleep costs less than a burn")
	if runtime.GOOS == "linux" {
		require.True(t, burnt.HasServer)
		// /proc truncates user and system time to 10 ms each, so a difference
		// of two readings is within 20 ms of the precise figure, and so is a
		// mean of such differences.
		require.InDelta(t, burnt.Self.Seconds(), burnt.Server.Seconds(), 0.025)
	}
}

// TestCPUCost_Unreadable: one reading that failed spoils the figure rather than
// counting as zero.
func TestCPUCost_Unreadable(t *testing.T) {
	var c cpuCost
	ok := cpuReading{self: time.Second, server: time.Second, hasSelf: true, hasServer: true}
	later := cpuReading{self: 3 * time.Second, server: 2 * time.Second, hasSelf: true, hasServer: true}
	c.add(ok, later)
	c.add(ok, cpuReading{self: 2 * time.Second, hasSelf: true}) // the server gone
	got := c.mean()
	require.True(t, got.HasSelf)
	require.False(t, got.HasServer)
	require.Equal(t, 1500*time.Millisecond, got.Self)
	require.Empty(t, cpuNote("a", cpuCost{}, "b", got), "no figure without this process's time")
}

func TestCPUNote(t *testing.T) {
	c := cpuCost{Self: 48 * time.Millisecond, Server: 66 * time.Millisecond, HasSelf: true, HasServer: true}
	b := cpuCost{Self: 23 * time.Millisecond, Server: 61 * time.Millisecond, HasSelf: true, HasServer: true}
	require.Equal(t, "; CPU per call (mean), this process + the server (--server-pid): the open 48 + 66 ms, the raw GETs 23 + 61 ms (1.36× theirs in all)",
		cpuNote("the open", c, "the raw GETs", b))
	c.HasServer = false
	require.Equal(t, "; CPU per call in this process (mean; --server-pid adds the server's): the open 48 ms, the raw GETs 23 ms",
		cpuNote("the open", c, "the raw GETs", b))
}

func TestCPUAlso(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    cpuCost
		want string
	}{
		{"both", cpuCost{Self: 31 * time.Millisecond, Server: 61 * time.Millisecond, HasSelf: true, HasServer: true}, "; the plain client 31 + 61 ms"},
		{"no server", cpuCost{Self: 31 * time.Millisecond, Server: 61 * time.Millisecond, HasSelf: true}, "; the plain client 31 ms"},
		{"unreadable", cpuCost{Self: 31 * time.Millisecond, HasServer: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, cpuAlso("the plain client", tc.c))
		})
	}
}

// TestRun_ServerPID runs item 4 with --server-pid naming a process (this
// test's): the open rows' notes give the CPU per call of both sides. A PID
// that names no process is a usage error.
func TestRun_ServerPID(t *testing.T) {
	if runtime.GOOS != "linux" {
		_, err := parseFlags([]string{"--server-pid", strconv.Itoa(os.Getpid())}, &bytes.Buffer{})
		require.ErrorContains(t, err, "--server-pid")
		return
	}
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	for _, pid := range []string{"-1", strconv.Itoa(gone.Process.Pid)} {
		_, err := parseFlags([]string{"--server-pid", pid}, &bytes.Buffer{})
		require.ErrorContains(t, err, "--server-pid", pid)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"--store", "mem://", "--quick", "--scale", "0.02", "--items", "4",
		"--server-pid", strconv.Itoa(os.Getpid()), "--json", out}, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(data, &rep))
	opens, compacted := 0, 0
	for _, it := range rep.Items {
		for _, r := range it.Rows {
			switch {
			case strings.HasPrefix(r.Name, "open, "):
				opens++
				require.Contains(t, r.Note, "this process + the server (--server-pid): the open ", r.Name)
				require.Contains(t, r.Note, ", the raw GETs ", r.Name)
				require.Regexp(t, `; a plain client, the same GETs each followed by zstd DecodeAll of its body, [0-9.e+]+ ms \(the open is [0-9.e+]+× it`, r.Note, r.Name)
				require.Regexp(t, `; the plain client [0-9.e+]+ \+ [0-9.e+]+ ms$`, r.Note, r.Name)
			case strings.HasPrefix(r.Name, "open after compacting"):
				compacted++
				require.Contains(t, r.Note, ", the plain reader ", r.Name)
			}
		}
	}
	require.Positive(t, opens)
	require.Positive(t, compacted)
}
