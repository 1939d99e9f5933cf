package reliability_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// minioServer is a MinIO this package starts, stops and restarts itself, on free
// loopback ports with its own data directories and credentials: the shared test
// server is never touched. It needs the binary deploy/minio/minio.sh installs
// ($TRANSCRIPT_CACHE/bin/minio, default ~/.cache/transcript-ci/bin/minio); without
// it the test is skipped, or fails under CI=true.
type minioServer struct {
	t       testing.TB
	bin     string
	args    []string
	srv     s3Server
	console string
	log     *os.File

	mu  sync.Mutex
	cmd *exec.Cmd
}

// minioBinary returns the MinIO binary or ends the test.
func minioBinary(t testing.TB) string {
	t.Helper()
	cache := os.Getenv("TRANSCRIPT_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		cache = filepath.Join(home, ".cache", "transcript-ci")
	}
	bin := filepath.Join(cache, "bin", "minio")
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("MinIO binary %s missing (bash deploy/minio/minio.sh install): %v", bin, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: these tests must run)")
		}
		t.Skip(msg)
	}
	return bin
}

// freeAddr returns a loopback address with a port nobody listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// startMinIO starts a MinIO on the given data directory arguments (one directory,
// or a pattern such as DIR/d{1...4} for erasure coding) and stops it when the
// test ends.
func startMinIO(t testing.TB, dirs ...string) *minioServer {
	t.Helper()
	m := &minioServer{
		t: t, bin: minioBinary(t),
		srv:     s3Server{endpoint: freeAddr(t), access: "rel-" + randomName(""), secret: randomName("secret-")},
		console: freeAddr(t),
	}
	m.args = append([]string{"server", "--quiet", "--address", m.srv.endpoint, "--console-address", m.console}, dirs...)
	var err error
	m.log, err = os.Create(filepath.Join(t.TempDir(), "minio.log"))
	require.NoError(t, err)
	t.Cleanup(func() {
		m.stop()
		_ = m.log.Close()
	})
	m.start()
	return m
}

// start starts the server process and waits (at most 60 s) until it is ready to
// serve writes. A live server (/minio/health/live) may still be forming its
// erasure set and answer "server not initialized"; /minio/health/cluster answers
// 200 only once the drives give write quorum.
func (m *minioServer) start() {
	m.t.Helper()
	m.mu.Lock()
	cmd := exec.Command(m.bin, m.args...)
	// MINIO_CI_CD lets an erasure-coded server use drives on the root file system
	// (where t.TempDir usually is); without it MinIO reports such drives as "not
	// found" and never forms the erasure set.
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+m.srv.access, "MINIO_ROOT_PASSWORD="+m.srv.secret,
		"MINIO_BROWSER=off", "MINIO_CI_CD=1")
	cmd.Stdout, cmd.Stderr = m.log, m.log
	require.NoError(m.t, cmd.Start())
	m.cmd = cmd
	m.mu.Unlock()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		// Live answers before an erasure set has formed; cluster waits for write quorum.
		resp, err := client.Get("http://" + m.srv.endpoint + "/minio/health/cluster")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	logData, _ := os.ReadFile(m.log.Name())
	m.t.Fatalf("MinIO on %s has no write quorum after 60s; log:\n%s", m.srv.endpoint, logData)
}

// stop terminates the server (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (m *minioServer) stop() {
	m.mu.Lock()
	cmd := m.cmd
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// logTail returns the last lines of the server's log, for failure messages.
func (m *minioServer) logTail() string {
	data, _ := os.ReadFile(m.log.Name())
	lines := strings.Split(string(data), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}
