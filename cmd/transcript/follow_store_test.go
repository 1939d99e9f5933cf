package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// lockedBuffer is a bytes.Buffer a running command writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startFollow starts the follow command with args and env; the process is
// killed when the test ends.
func startFollow(t *testing.T, env []string, args ...string) (cmd *exec.Cmd, stdout, stderr *lockedBuffer) {
	t.Helper()
	cmd = exec.Command(binary, append([]string{"follow"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TRANSCRIPT_STORE="), env...)
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, stdout, stderr
}

// waitExit waits up to d for cmd to exit and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("follow did not exit within %v", d)
		return -1
	}
}

// proxy forwards the TCP connections to addr that it accepts on ln until the
// test ends: a store that comes up once the proxy starts.
func proxy(t *testing.T, ln net.Listener, addr string) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", addr)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// TestFollow_StoreDownAtStart: follow started while the store cannot be
// reached says once that it waits for it, retries, and follows once the store
// answers: the session written meanwhile is uploaded, and SIGTERM exits 0.
func TestFollow_StoreDownAtStart(t *testing.T) {
	endpoint, _, _ := s3test.S3Endpoint(t)
	root, _ := piRoot(t)
	port := freePort(t) // nothing listens there until the proxy starts
	bucketName := fmt.Sprintf("transcript-cli-down-%d-%d", os.Getpid(), time.Now().UnixNano())
	viaProxy := fmt.Sprintf("s3://%s/ops?endpoint=127.0.0.1:%s&insecure=true&create=true&timeout=2s", bucketName, port)
	direct := fmt.Sprintf("s3://%s/ops?endpoint=%s&insecure=true", bucketName, endpoint)
	cmd, stdout, stderr := startFollow(t, nil, "--json", "--store", viaProxy, "--state-dir", t.TempDir(), "--batch", "10ms", root)

	waitFor(t, "the waiting event", func() bool { return strings.Contains(stdout.String(), `"event":"waiting"`) })
	require.Contains(t, stdout.String(), "bucket unavailable")
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	require.NoError(t, err)
	proxy(t, ln, endpoint)

	waitFor(t, "the fixture uploaded", func() bool {
		r := cli(t, "cat", "--store", direct, "--agent", "--tmp-browse--", "--session", fixtureV3ID)
		return r.code == 0 && strings.Count(r.stdout, "\n") > 1
	})
	require.Equal(t, 1, strings.Count(stdout.String(), `"event":"waiting"`), "one waiting event: %s", stdout.String())
	require.Contains(t, stdout.String(), `"event":"ready"`)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, waitExit(t, cmd, 30*time.Second), stderr.String())
	require.Contains(t, stdout.String(), `"event":"summary"`)
}

// TestFollow_StoreDownWaiting: while the store cannot be reached follow waits,
// and SIGTERM ends the wait at once with exit 0; --once does not wait, and a
// store that refuses (a missing bucket, refused credentials, a bad URL) fails
// at once, as before.
func TestFollow_StoreDownWaiting(t *testing.T) {
	endpoint, _, _ := s3test.S3Endpoint(t)
	down := "s3://down/ops?endpoint=127.0.0.1:" + freePort(t) + "&insecure=true&timeout=2s"
	missing := fmt.Sprintf("s3://transcript-cli-missing-%d/ops?endpoint=%s&insecure=true&timeout=2s", time.Now().UnixNano(), endpoint)
	t.Run("SIGTERM while waiting", func(t *testing.T) {
		root, _ := piRoot(t)
		cmd, _, stderr := startFollow(t, nil, "--store", down, "--state-dir", t.TempDir(), root)
		waitFor(t, "the waiting line", func() bool { return strings.Contains(stderr.String(), "follow: waiting: ") })
		require.Contains(t, stderr.String(), "following starts when it answers")
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		start := time.Now()
		require.Equal(t, 0, waitExit(t, cmd, 5*time.Second), stderr.String())
		require.Less(t, time.Since(start), 3*time.Second, "SIGTERM ends the wait promptly")
		require.Equal(t, 1, strings.Count(stderr.String(), "follow: waiting: "), stderr.String())
	})
	tests := []struct {
		name  string
		env   []string
		store string
		code  int
		msg   string
	}{
		{"--once while down", nil, down, 1, "bucket unavailable"},
		{"missing bucket", nil, missing, 1, "not found"},
		{"refused credentials", []string{"AWS_ACCESS_KEY_ID=nobody", "AWS_SECRET_ACCESS_KEY=nothing"}, missing, 1, "access denied"},
		{"bad URL", nil, "s3://?endpoint=" + endpoint, 2, "--store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, _ := piRoot(t)
			args := []string{"--store", tt.store, "--state-dir", t.TempDir(), root}
			if strings.HasPrefix(tt.name, "--once") {
				args = append([]string{"--once"}, args...)
			}
			cmd, _, stderr := startFollow(t, tt.env, args...)
			require.Equal(t, tt.code, waitExit(t, cmd, 15*time.Second), stderr.String())
			require.Contains(t, stderr.String(), tt.msg)
			require.NotContains(t, stderr.String(), "waiting")
		})
	}
}

// TestStoreUnavailable: follow waits for a store that could not answer, never
// for one that refused.
func TestStoreUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"bucket unavailable", fmt.Errorf("store x: open s3 bucket b: %w", bucket.ErrUnavailable), true},
		{"connection refused", fmt.Errorf("store x: %w", refused), true},
		{"missing bucket", &cmdcli.NotFoundError{What: "bucket"}, false},
		{"missing directory store", fmt.Errorf("store x: %w", bucket.ErrNotFound), false},
		{"refused credentials", fmt.Errorf("store x: %w", bucket.ErrAccessDenied), false},
		{"refused credentials over an unavailable retry", errors.Join(bucket.ErrAccessDenied, bucket.ErrUnavailable), false},
		{"bad URL", &cmdcli.UsageError{Msg: "--store: bad"}, false},
		{"other", errors.New("permission denied"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, storeUnavailable(tt.err))
		})
	}
}
