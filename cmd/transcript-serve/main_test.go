package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
	"go.yaml.in/yaml/v3"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/internal/s3test"
)

const testKey = "0123456789abcdef0123456789abcdef-cmd-test"

// binary is the transcript-serve built for the process tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "transcript-serve-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "transcript-serve")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic(fmt.Sprintf("go build: %v\n%s", err, out))
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// s3URL creates a bucket on the engine's test server and returns its store URL.
func s3URL(t *testing.T, e s3test.Engine) string {
	b := e.NewBucket(t, "serve-cmd-")
	endpoint, _, _ := e.Endpoint(t)
	return fmt.Sprintf("s3://%s/sessions?endpoint=%s&insecure=true&region=us-east-1", b.Name(), endpoint)
}

// process is a running transcript-serve.
type process struct {
	cmd  *exec.Cmd
	addr string
	done chan error
}

// start runs transcript-serve serve on store (with the flags args) and waits
// for its "listening" line.
func start(t *testing.T, store string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--store", store}, args...)...)
	cmd.Env = append(os.Environ(), "TRANSCRIPT_JWT_KEY="+testKey)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, done: make(chan error, 1)}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
			p.addr = line.Addr
			break
		}
	}
	require.NotEmpty(t, p.addr, "no listening line")
	go func() {
		_, _ = io.Copy(io.Discard, stderr)
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// mint runs transcript-serve token.
func mint(t *testing.T, tenant, user string) string {
	cmd := exec.Command(binary, "token", "--tenant", tenant, "--user", user)
	cmd.Env = append(os.Environ(), "TRANSCRIPT_JWT_KEY="+testKey)
	out, err := cmd.Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

func call(t *testing.T, addr, token, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+addr+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

func entry(id, parent string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}}`, id, p)
}

// TestTwoProcessesRace runs two server processes on one bucket of each S3 engine
// and 8 clients appending at one expected head through them: exactly one wins.
func TestTwoProcessesRace(t *testing.T) {
	for _, e := range s3test.Engines() {
		t.Run(e.Name, func(t *testing.T) { testTwoProcessesRace(t, s3URL(t, e)) })
	}
}

func testTwoProcessesRace(t *testing.T, store string) {
	procs := []*process{start(t, store), start(t, store)}
	tok := mint(t, "acme", "alice")
	code, body := call(t, procs[0].addr, tok, "POST", "/v1/sessions", `{"id":"race"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = call(t, procs[1].addr, tok, "POST", "/v1/sessions/race/entries", `{"expectedHead":null,"entries":[`+entry("root", "")+`]}`)
	require.Equal(t, http.StatusOK, code, body)
	codes := make([]int, 8)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			codes[i], _ = call(t, procs[i%2].addr, tok, "POST", "/v1/sessions/race/entries",
				`{"expectedHead":"root","entries":[`+entry(fmt.Sprintf("c%d", i), "root")+`]}`)
		})
	}
	wg.Wait()
	wins := 0
	for _, c := range codes {
		if c == http.StatusOK {
			wins++
		} else {
			require.Equal(t, http.StatusConflict, c, "codes %v", codes)
		}
	}
	require.Equal(t, 1, wins, "codes %v", codes)
	for _, p := range procs {
		code, body := call(t, p.addr, tok, "GET", "/v1/sessions/race", "")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, `"entryCount":2`)
	}
}

// TestShutdownFinishesInFlightAppend sends SIGTERM while an append's body is
// still arriving: the server stops accepting connections, then commits the
// append, answers it, and exits 0. The signal goes only once the server reports
// the append in flight: a connection still in the listen queue when the listener
// closes is dropped by the kernel, which no server can answer.
func TestShutdownFinishesInFlightAppend(t *testing.T) {
	p := start(t, "file://"+t.TempDir())
	tok := mint(t, "acme", "alice")
	code, body := call(t, p.addr, tok, "POST", "/v1/sessions", `{"id":"s"}`)
	require.Equal(t, http.StatusCreated, code, body)

	payload := `{"expectedHead":null,"entries":[` + entry("u1", "") + `]}`
	conn, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/sessions/s/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		tok, len(payload), payload[:10])
	require.NoError(t, err)
	// The append's handler runs once the gauge counts it beside the /metrics
	// request that reads it.
	require.Eventually(t, func() bool {
		_, body := call(t, p.addr, "", "GET", "/metrics", "")
		return strings.Contains(body, "\ntranscript_serve_requests_in_flight 2\n")
	}, 30*time.Second, 10*time.Millisecond, "the append is in flight")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	for { // shutdown has begun once new connections are refused
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			break
		}
		c.Close()
	}
	_, err = io.WriteString(conn, payload[10:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(data))
	require.Contains(t, string(data), `"head":"u1"`)
	require.NoError(t, <-p.done, "clean exit")
	p.done <- nil // for the cleanup
}

// TestBucketMetrics: /metrics serves the bucket's requests by operation and
// backend beside the server's own metrics, and the Go runtime's and the
// process's.
func TestBucketMetrics(t *testing.T) {
	p := start(t, "file://"+t.TempDir())
	tok := mint(t, "acme", "alice")
	code, body := call(t, p.addr, tok, "POST", "/v1/sessions", `{"id":"s"}`)
	require.Equal(t, http.StatusCreated, code, body)
	code, body = call(t, p.addr, tok, "POST", "/v1/sessions/s/entries", `{"expectedHead":null,"entries":[`+entry("u1", "")+`]}`)
	require.Equal(t, http.StatusOK, code, body)
	_, body = call(t, p.addr, "", "GET", "/metrics", "")
	for _, want := range []string{
		`transcript_bucket_requests_total{backend="file",operation="put"}`,
		`transcript_bucket_requests_total{backend="file",operation="put_if"}`,
		`transcript_bucket_request_duration_seconds_bucket{backend="file",operation="list",le=`,
		`transcript_serve_requests_total{`,
		// The process's memory and goroutines, as transcript follow serves
		// them: what an operator watches a server's bounds with.
		"go_memstats_heap_inuse_bytes ",
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		require.Contains(t, body, want)
	}
}

// TestUsage checks the command line: usage errors exit 2 and print nothing on
// stdout; help and the version go to stdout; a token that would be expired at once
// is refused.
func TestUsage(t *testing.T) {
	key := map[string]string{"TRANSCRIPT_JWT_KEY": testKey}
	cases := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stdout string // substring of stdout ("" for none at all)
		stderr string // substring of stderr
	}{
		{"bad store", []string{"serve", "--store", "ftp://x"}, key, 2, "", "--store"},
		{"bad agent", []string{"serve", "--store", "mem://", "--agent", "a/b"}, key, 2, "", `serve: --agent "a/b"`},
		{"no streams", []string{"serve", "--store", "mem://", "--max-streams-per-owner", "0"}, key, 2, "", "--max-streams-per-owner 0"},
		{"no headers", []string{"serve", "--store", "mem://", "--max-header-bytes", "0"}, key, 2, "", "--max-header-bytes 0"},
		{"no connections", []string{"serve", "--store", "mem://", "--max-connections", "0"}, key, 2, "", "--max-connections 0"},
		{"no key", []string{"serve", "--store", "mem://"}, nil, 2, "", "set --jwt-key-file"},
		{"bodies in flight under one body", []string{"serve", "--store", "mem://", "--max-body", "100", "--max-bodies-in-flight", "99"}, key, 2, "", "--max-bodies-in-flight 99"},
		{"bodies per owner under one body", []string{"serve", "--store", "mem://", "--max-body", "100", "--max-bodies-per-owner", "99"}, key, 2, "", "--max-bodies-per-owner 99"},
		{"bodies per owner over all", []string{"serve", "--store", "mem://", "--max-body", "100", "--max-bodies-in-flight", "200", "--max-bodies-per-owner", "201"}, key, 2, "", "--max-bodies-per-owner 201"},
		{"no cache bytes", []string{"serve", "--store", "mem://", "--max-cached-bytes", "0"}, key, 2, "", "--max-cached-bytes 0"},
		{"no body", []string{"serve", "--store", "mem://", "--max-body", "-1"}, key, 2, "", "--max-body -1"},
		{"token without owner", []string{"token"}, key, 2, "", "--tenant and --user are required"},
		{"token without key", []string{"token", "--tenant", "a", "--user", "b"}, nil, 2, "", "no key"},
		{"token ttl 0", []string{"token", "--tenant", "a", "--user", "b", "--ttl", "0"}, key, 2, "", "--ttl 0s: want more than 0"},
		{"token negative ttl", []string{"token", "--tenant", "a", "--user", "b", "--ttl", "-1h"}, key, 2, "", "--ttl -1h0m0s: want more than 0"},
		{"bad flag", []string{"serve", "--nope"}, nil, 2, "", "unknown flag --nope"},
		{"mistyped flag", []string{"serve", "--stroe", "mem://"}, nil, 2, "", "did you mean --store?"},
		{"Go-style flag", []string{"token", "-tenant", "a"}, nil, 2, "", "did you mean --tenant?"},
		{"unknown command", []string{"tokn"}, nil, 2, "", `unknown command "tokn" (did you mean "token"?)`},
		{"bad log format", []string{"serve", "--store", "mem://", "--log", "xml"}, key, 2, "", "--log"},
		{"help", []string{"-h"}, nil, 0, "Usage:", ""},
		{"serve help", []string{"serve", "--help"}, nil, 0, "--trust-headers", ""},
		{"token help", []string{"help", "token"}, nil, 0, "--ttl", ""},
		{"version", []string{"--version"}, nil, 0, "transcript-serve", ""},
		{"token version", []string{"token", "--version"}, nil, 0, "transcript-serve", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(t.Context(), tc.args, func(k string) string { return tc.env[k] }, &out, &errb)
			require.Equal(t, tc.code, exitCode(err, &errb), errb.String())
			require.Contains(t, errb.String(), tc.stderr)
			if tc.stdout == "" {
				require.Empty(t, out.String())
			} else {
				require.Contains(t, out.String(), tc.stdout)
				require.Empty(t, errb.String())
			}
		})
	}
	var out bytes.Buffer
	err := run(t.Context(), []string{"token", "--tenant", "a", "--user", "b"}, func(k string) string {
		return map[string]string{"TRANSCRIPT_JWT_KEY": testKey}[k]
	}, &out, io.Discard)
	require.NoError(t, err)
	require.Len(t, strings.Split(strings.TrimSpace(out.String()), "."), 3)
}

// TestTrustHeadersWarns: a server that takes owners from headers says so, at
// warning level, before it listens.
func TestTrustHeadersWarns(t *testing.T) {
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--store", "file://"+t.TempDir(), "--trust-headers")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var levels []string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var line struct{ Level, Msg string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		levels = append(levels, line.Level)
		if line.Msg == "listening" {
			break
		}
		require.Contains(t, line.Msg, "--trust-headers")
	}
	require.Equal(t, []string{"WARN", "INFO"}, levels)
}

// TestManifestArgs checks that the Deployment's args parse as serve flags.
func TestManifestArgs(t *testing.T) {
	data, err := os.ReadFile("../../deploy/k8s/serve-deployment.yaml")
	require.NoError(t, err)
	var doc struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args          []string `yaml:"args"`
						LivenessProbe struct {
							TimeoutSeconds int `yaml:"timeoutSeconds"`
						} `yaml:"livenessProbe"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	require.Equal(t, "Deployment", doc.Kind)
	require.Len(t, doc.Spec.Template.Spec.Containers, 1)
	args := doc.Spec.Template.Spec.Containers[0].Args
	require.NotEmpty(t, args)
	fs, f := newServeFlagSet(func(string) string { return "" }, io.Discard)
	require.NoError(t, parse(fs, args))
	require.Equal(t, "$(TRANSCRIPT_STORE)", f.store.URL)
	require.Equal(t, ":8080", f.addr)
	// A probe past --max-connections waits behind requests in progress.
	probe := time.Duration(doc.Spec.Template.Spec.Containers[0].LivenessProbe.TimeoutSeconds) * time.Second
	require.Greater(t, probe, f.requestTimeout, "the liveness probe outwaits a request")
}

// TestShutdownEndsStreams: SIGTERM ends an open event stream at once (it never
// goes idle, so a shutdown that waited for it would wait out its timeout) and
// the server exits 0 well within --shutdown-timeout.
func TestShutdownEndsStreams(t *testing.T) {
	p := start(t, "file://"+t.TempDir())
	tok := mint(t, "acme", "alice")
	code, body := call(t, p.addr, tok, "POST", "/v1/sessions", `{"id":"s"}`)
	require.Equal(t, http.StatusCreated, code, body)
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+p.addr+"/v1/sessions/s/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		ended <- err
	}()

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-ended:
		require.NoError(t, err, "the stream ends cleanly")
	case <-time.After(10 * time.Second): // the default --shutdown-timeout is 30s
		t.Fatal("the stream did not end on shutdown")
	}
	requireCleanExit(t, p, 10*time.Second)
}

// requireCleanExit waits at most within for p to exit, and requires exit 0.
func requireCleanExit(t *testing.T, p *process, within time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		require.NoError(t, err, "clean exit")
		p.done <- nil // for the cleanup
	case <-time.After(within):
		t.Fatal("the server did not exit")
	}
}

// TestStoreFlagAsEveryCommand: --store defaults to $TRANSCRIPT_STORE, else to
// the directory store every command uses (cli.DefaultStoreURL).
func TestStoreFlagAsEveryCommand(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"", cli.DefaultStoreURL},
		{"mem://", "mem://"},
	} {
		fs, f := newServeFlagSet(func(k string) string { return map[string]string{cli.StoreEnv: tc.env}[k] }, io.Discard)
		require.NoError(t, parse(fs, nil))
		require.Equal(t, tc.want, f.store.URL)
	}
}

// TestShutdownClosesSilentConnections: a connection that never sent a byte
// (a client's spare connection, a load balancer's TCP probe) does not hold
// SIGTERM's shutdown back: net/http alone would wait 5 seconds for it to go
// idle. The server closes it and exits 0 at once.
func TestShutdownClosesSilentConnections(t *testing.T) {
	p := start(t, "file://"+t.TempDir())
	silent, err := net.Dial("tcp", p.addr)
	require.NoError(t, err)
	defer silent.Close()
	// The server accepts in order: once a later connection was answered, the
	// silent one was accepted (and is waiting for its first request).
	code, _ := call(t, p.addr, "", "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, code)

	sent := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	requireCleanExit(t, p, 30*time.Second)
	require.Less(t, time.Since(sent), 4*time.Second, "the shutdown waited for the silent connection")
	_ = silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := silent.Read(make([]byte, 1))
	require.Zero(t, n)
	require.Error(t, err, "the silent connection is closed")
}
