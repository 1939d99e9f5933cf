package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

const (
	fixtureV3   = "../../sessiontree/testdata/pi-v3-browse-session.jsonl"
	fixtureV1   = "../../sessiontree/testdata/pi-v1-prompt-cache-replay.jsonl"
	fixtureV3ID = "6d4c2f18-9a3b-4e57-8c21-2f5a9d0b7e64"
)

// binary is the transcript command built once by TestMain, in binDir.
var binary, binDir string

// otherBinaries builds the project's other commands (transcript-compact,
// transcript-serve, transcript-bench) into binDir once, for the tests of the
// contract they share.
var otherBinaries = sync.OnceValue(func() error {
	build := exec.Command("go", "build", "-o", binDir+string(os.PathSeparator), "../transcript-compact", "../transcript-serve", "../transcript-bench")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
})

// builtBinary returns the path of command name (transcript, transcript-compact,
// transcript-serve or transcript-bench), built once.
func builtBinary(t *testing.T, name string) string {
	t.Helper()
	if name != "transcript" {
		require.NoError(t, otherBinaries())
	}
	return filepath.Join(binDir, name)
}

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "transcript-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	binary = filepath.Join(dir, "transcript")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the transcript command:", err)
		return 1
	}
	return m.Run()
}

// result is one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

// cmdOpts tune one run of the binary.
type cmdOpts struct {
	bin   string // the binary; "" for transcript
	dir   string // working directory; "" for the test's own
	stdin string
	env   []string // extra environment
}

// runBinary runs the binary bin with stdin and args.
func runBinary(t testing.TB, bin, stdin string, args ...string) result {
	t.Helper()
	return cliWith(t, cmdOpts{bin: bin, stdin: stdin}, args...)
}

// cli runs the built binary with args and returns its streams and exit code.
func cli(t testing.TB, args ...string) result {
	t.Helper()
	return cliWith(t, cmdOpts{}, args...)
}

func cliWith(t testing.TB, o cmdOpts, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := binary
	if o.bin != "" {
		bin = o.bin
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = o.dir
	cmd.Stdin = strings.NewReader(o.stdin)
	cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
	cmd.Env = append(cmd.Env, o.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %v: %v", args, err)
	}
	return result{out.String(), errOut.String(), code}
}

// ok runs args and requires exit code 0 and nothing on stderr.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := cli(t, args...)
	require.Equal(t, 0, r.code, "%v: stderr %s", args, r.stderr)
	require.Empty(t, r.stderr, "%v writes nothing on stderr when it succeeds", args)
	return r.stdout
}

func fixture(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("fixture %s: %v", path, err)
		}
		t.Skipf("fixture %s not present: %v", path, err)
	}
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	return abs
}

// hashTree hashes every file (path relative to dir, and content) under dir.
func hashTree(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", rel, len(b), b)
		return err
	}))
	return hex.EncodeToString(h.Sum(nil))
}

// hashBucket hashes every object (key and content) of the store at url.
func hashBucket(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	b, _, err := bucketurl.Open(ctx, url)
	require.NoError(t, err)
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	h := sha256.New()
	require.NoError(t, b.List(ctx, bucket.ListOptions{}, func(o bucket.ObjectInfo) error {
		rc, _, err := b.Get(ctx, o.Key)
		if err != nil {
			return err
		}
		defer rc.Close()
		fmt.Fprintf(h, "%s\x00", o.Key)
		_, err = io.Copy(h, rc)
		return err
	}))
	return hex.EncodeToString(h.Sum(nil))
}

// backend makes fresh stores of one kind and fingerprints them.
type backend struct {
	name string
	// fresh returns the URL of a new, empty store.
	fresh func(t *testing.T) string
	// snapshot fingerprints everything the store holds.
	snapshot func(t *testing.T, url string) string
}

func fileBackend() backend {
	return backend{
		name:  "file",
		fresh: func(t *testing.T) string { return "file://" + t.TempDir() },
		snapshot: func(t *testing.T, url string) string {
			return hashTree(t, strings.TrimPrefix(url, "file://"))
		},
	}
}

func s3Backend() backend { return s3BackendAt("ops/transcripts") }

// s3BackendAt makes stores in fresh buckets of the test MinIO under key prefix
// prefix ("" for none).
func s3BackendAt(prefix string) backend {
	return backend{
		name: "s3",
		fresh: func(t *testing.T) string {
			endpoint, _, _ := s3test.S3Endpoint(t)
			name := fmt.Sprintf("transcript-cli-%d-%d", os.Getpid(), time.Now().UnixNano())
			return fmt.Sprintf("s3://%s/%s?endpoint=%s&insecure=true&create=true", name, prefix, endpoint)
		},
		snapshot: hashBucket,
	}
}

func TestCLI_File(t *testing.T) { runSuite(t, fileBackend()) }

func TestCLI_MinIO(t *testing.T) { runSuite(t, s3Backend()) }

// runSuite runs every contract test against stores of backend b.
func runSuite(t *testing.T, b backend) {
	tests := []struct {
		name string
		fn   func(*testing.T, backend)
	}{
		{"ImportExportContext", testImportExportContext},
		{"ReadOnlyAndErrors", testReadOnlyAndErrors},
		{"Append", testAppend},
		{"ConcurrentAppends", testConcurrentAppends},
		{"Verify", testVerify},
		{"Restore", testRestore},
		{"Demo", testDemo},
		{"ForgedSuperseder", testForgedSuperseder},
		{"IncompleteGroup", testIncompleteGroup},
		{"HostileIds", testHostileIds},
		{"Folders", testFolders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, b) })
	}
}

func TestUsage(t *testing.T) {
	store := "file://" + t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring of stdout
		stderr string // substring of stderr
	}{
		{"no command", nil, 2, "", "no command given"},
		{"help", []string{"help"}, 0, "Commands:", ""},
		{"help command", []string{"help", "restore"}, 0, "--parallel", ""},
		{"help --help", []string{"help", "--help"}, 0, "Commands:", ""},
		{"help -h", []string{"help", "-h"}, 0, "Commands:", ""},
		{"help --version", []string{"help", "--version"}, 0, "transcript ", ""},
		{"help COMMAND --help", []string{"help", "ls", "--help"}, 0, "Usage: transcript ls", ""},
		{"command -h", []string{"verify", "-h"}, 0, "Usage: transcript verify", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"unknown flag", []string{"ls", "--store", store, "--nope"}, 2, "", "unknown flag --nope"},
		{"bad flag value", []string{"restore", "--store", store, "--out", "x", "--parallel", "zero"}, 2, "", "invalid argument"},
		{"cat without session", []string{"cat", "--store", store}, 2, "", "needs --agent and --session"},
		{"context without session or file", []string{"context", "--store", store, "--agent", "a"}, 2, "", "context needs --agent and --session, or --file"},
		{"session path traversal", []string{"cat", "--store", store, "--agent", "a", "--session", "../x"}, 2, "", `--session "../x"`},
		{"agent with a slash", []string{"export", "--store", store, "--agent", "a/b", "--session", "s"}, 2, "", `--agent "a/b"`},
		{"namespace path traversal", []string{"ls", "--store", store, "--ns", ".."}, 2, "", `--ns ".."`},
		{"positional session", []string{"cat", "--store", store, "default/a/s"}, 2, "", "takes no arguments"},
		{"import without file", []string{"import", "--store", store, "--agent", "a", "--session", "s"}, 2, "", "one FILE.jsonl"},
		{"flags after file", []string{"import", "--store", store, "f.jsonl", "--agent", "a"}, 2, "", "one FILE.jsonl"},
		{"restore without --out", []string{"restore", "--store", store}, 2, "", "needs --out"},
		{"bad store url", []string{"ls", "--store", "ftp://x"}, 2, "", `unknown scheme "ftp"`},
		{"bad writer id", []string{"append", "--store", store, "--agent", "a", "--session", "s", "--writer", "a b"}, 2, "", "--writer"},
		{"demo bad replicas", []string{"demo", "--store", store, "--replicas", "0"}, 2, "", "--replicas"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, tt.args...)
			require.Equal(t, tt.code, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
			require.Contains(t, r.stdout, tt.stdout)
			require.Contains(t, r.stderr, tt.stderr)
			if tt.code == 2 && len(tt.args) > 0 && tt.args[0] != "help" {
				require.Empty(t, r.stdout, "a usage error prints nothing on stdout")
			}
		})
	}
}

func testImportExportContext(t *testing.T, b backend) {
	v3, v1 := fixture(t, fixtureV3), fixture(t, fixtureV1)
	store := b.fresh(t)
	sel := []string{"--store", store, "--agent", "coder", "--session", "s3file"}

	out := ok(t, append(append([]string{"import"}, sel...), v3)...)
	require.Contains(t, out, "default/coder/s3file\t13 lines\t13 added as ")
	ok(t, "import", "--store", store, "--agent", "coder", "--session", "s1file", v1)

	// Importing the same file again changes nothing.
	before := b.snapshot(t, store)
	out = ok(t, append(append([]string{"import"}, sel...), v3)...)
	require.Contains(t, out, "unchanged")
	var sum importSummary
	require.NoError(t, json.Unmarshal([]byte(ok(t, append(append([]string{"import", "--json"}, sel...), v3)...)), &sum))
	require.Equal(t, importSummary{Session: "default/coder/s3file", Lines: 13, Existing: true}, sum)
	require.Equal(t, before, b.snapshot(t, store), "a second import changes nothing")

	// Export of an imported v3 file is the file, byte for byte.
	want, err := os.ReadFile(v3)
	require.NoError(t, err)
	require.Equal(t, string(want), ok(t, append([]string{"export"}, sel...)...))
	outFile := filepath.Join(t.TempDir(), "out.jsonl")
	require.Equal(t, "wrote default/coder/s3file (12 entries and the header) to "+outFile+"\n",
		ok(t, append([]string{"export", "--out", outFile}, sel...)...))
	got, err := os.ReadFile(outFile)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))

	// The context from the store equals the context of the file itself, at the
	// active leaf and at another leaf.
	fromStore := ok(t, append([]string{"context"}, sel...)...)
	require.Equal(t, ok(t, "context", "--file", v3), fromStore)
	require.Contains(t, fromStore, `"role":"compactionSummary"`)
	atLeaf := ok(t, append([]string{"context", "--leaf", "3c4d5e6f"}, sel...)...)
	require.Equal(t, ok(t, "context", "--file", v3, "--leaf", "3c4d5e6f"), atLeaf)
	require.NotEqual(t, fromStore, atLeaf)

	// cat: header and entries as JSONL, in the export's order.
	require.Equal(t, string(want), ok(t, append([]string{"cat"}, sel...)...))

	// tree: one line per entry, the header, the compaction and the active leaf.
	tree := ok(t, append([]string{"tree"}, sel...)...)
	require.Contains(t, tree, "session "+fixtureV3ID+" (version 3")
	require.Contains(t, tree, "COMPACTION")
	require.Equal(t, 1, strings.Count(tree, "ACTIVE LEAF"), tree)
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n")[1:] {
		var e struct{ ID string }
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		require.Contains(t, tree, " "+shortID(e.ID)+" ", "every entry has a line")
	}

	// ls: one JSON object per line with counts.
	lines := strings.Split(strings.TrimSpace(ok(t, "ls", "--store", store, "--json")), "\n")
	require.Len(t, lines, 2)
	var info sessionInfo
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &info))
	require.Equal(t, "s3file", info.Session)
	require.Equal(t, 12, info.Entries, "the session header is not counted")
	require.Equal(t, 1, info.Segments)
	require.Positive(t, info.Bytes)
	require.WithinDuration(t, time.Now(), info.Updated, time.Hour)
	require.Contains(t, ok(t, "ls", "--store", store, "--agent", "coder"), "s1file")
}

func testReadOnlyAndErrors(t *testing.T, b backend) {
	v3 := fixture(t, fixtureV3)
	store := b.fresh(t)
	sel := []string{"--store", store, "--agent", "coder", "--session", "s1"}
	ok(t, append(append([]string{"import"}, sel...), v3)...)
	before := b.snapshot(t, store)
	for _, args := range [][]string{
		{"ls", "--store", store},
		{"ls", "--store", store, "--json", "--segments"},
		append([]string{"cat"}, sel...),
		append([]string{"export"}, sel...),
		append([]string{"context"}, sel...),
		append([]string{"tree"}, sel...),
		{"verify", "--store", store},
		{"verify", "--store", store, "--json"},
		{"stats", "--store", store},
		{"stats", "--store", store, "--json"},
	} {
		require.NotEmpty(t, ok(t, args...), "%v prints its result on stdout", args)
	}
	// Failing reads change nothing either and say why on stderr only.
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing session cat", []string{"cat", "--store", store, "--agent", "coder", "--session", "nope"}, "session default/coder/nope: not found"},
		{"missing session export", []string{"export", "--store", store, "--agent", "coder", "--session", "nope"}, "not found"},
		{"missing session context", []string{"context", "--store", store, "--agent", "coder", "--session", "nope"}, "not found"},
		{"missing session tree", []string{"tree", "--store", store, "--agent", "coder", "--session", "nope"}, "not found"},
		{"missing session ls", []string{"ls", "--store", store, "--agent", "coder", "--session", "nope"}, "not found"},
		{"missing agent", []string{"verify", "--store", store, "--agent", "nobody"}, `agent "nobody" in namespace "default": not found`},
		{"unknown namespace ls", []string{"ls", "--store", store, "--ns", "acme"}, `namespace "acme": not found`},
		{"unknown namespace verify", []string{"verify", "--store", store, "--ns", "acme"}, `namespace "acme": not found`},
		{"unknown namespace stats", []string{"stats", "--store", store, "--ns", "acme"}, `namespace "acme": not found`},
		{"unknown namespace restore", []string{"restore", "--store", store, "--ns", "acme", "--out", t.TempDir()}, `namespace "acme": not found`},
		{"session in another namespace", []string{"cat", "--store", store, "--ns", "acme", "--agent", "coder", "--session", "s1"}, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, tt.args...)
			require.Equal(t, 1, r.code, r.stderr)
			require.Empty(t, r.stdout)
			require.Contains(t, r.stderr, tt.want)
		})
	}
	require.Equal(t, before, b.snapshot(t, store), "read-only commands leave the store unchanged")
}

// headerLine is the session header of a Pi v3 session id, as append reads it.
func headerLine(id string) string {
	return fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-09-25T22:28:55.554Z","cwd":"/work"}`, id)
}

// entryLine is a custom entry as append reads it.
func entryLine(id, parent string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"custom","id":%q,"parentId":%s,"timestamp":"2026-09-25T22:28:55.554Z","customType":"note","data":{"n":%q}}`, id, p, id)
}

func testAppend(t *testing.T, b backend) {
	store := b.fresh(t)
	sel := []string{"--store", store, "--agent", "a", "--session", "s"}
	appendIn := func(stdin string, extra ...string) result {
		return cliWith(t, cmdOpts{stdin: stdin}, append(append([]string{"append"}, sel...), extra...)...)
	}
	r := appendIn(headerLine("s") + "\n" + entryLine("e1", "") + "\n\n" + entryLine("e2", "e1") + "\n")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "default/a/s\t3 entries\t3 added as ")

	snap := b.snapshot(t, store)
	tests := []struct {
		name, stdin, want string
	}{
		{"malformed json", entryLine("e3", "e2") + "\n{\"type\":\"custom\",\"id\":\n", "line 2"},
		{"no id", `{"type":"custom","parentId":null}` + "\n", "line 1"},
		{"no type", `{"id":"x","parentId":null}` + "\n", "line 1"},
		{"not an object", "[1,2]\n", "line 1"},
		{"empty input", "\n\n", "no entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := appendIn(tt.stdin)
			require.Equal(t, 1, r.code)
			require.Empty(t, r.stdout)
			require.Contains(t, r.stderr, tt.want)
		})
	}
	require.Equal(t, snap, b.snapshot(t, store), "rejected input writes nothing")

	r = appendIn(entryLine("e3", "e2")+"\n", "--writer", "replica-7", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "-replica-7-0000000000000001-")
	cat := ok(t, append([]string{"cat"}, sel...)...)
	require.Equal(t, headerLine("s")+"\n"+entryLine("e1", "")+"\n"+entryLine("e2", "e1")+"\n"+entryLine("e3", "e2")+"\n", cat)
}

func testConcurrentAppends(t *testing.T, b backend) {
	store := b.fresh(t)
	sel := []string{"--store", store, "--agent", "a", "--session", "race"}
	r := cliWith(t, cmdOpts{stdin: headerLine("race") + "\n" + entryLine("root", "") + "\n"}, append([]string{"append"}, sel...)...)
	require.Equal(t, 0, r.code, r.stderr)
	const n = 8
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := entryLine(fmt.Sprintf("p%d-a", i), "root") + "\n" + entryLine(fmt.Sprintf("p%d-b", i), fmt.Sprintf("p%d-a", i)) + "\n"
			// All processes use one writer id: keys still differ by content hash.
			results[i] = cliWith(t, cmdOpts{stdin: in}, append([]string{"append", "--writer", "same-writer"}, sel...)...)
		}()
	}
	wg.Wait()
	for i, r := range results {
		require.Equal(t, 0, r.code, "append %d: %s", i, r.stderr)
	}
	cat := ok(t, append([]string{"cat"}, sel...)...)
	for i := range n {
		require.Contains(t, cat, fmt.Sprintf(`"id":"p%d-a"`, i))
		require.Contains(t, cat, fmt.Sprintf(`"id":"p%d-b"`, i))
	}
	require.Len(t, strings.Split(strings.TrimSpace(cat), "\n"), 2+2*n, "the header, the root and two entries per append")
	segs := strings.Split(strings.TrimSpace(ok(t, "ls", "--store", store, "--segments", "--json")), "\n")
	require.Len(t, segs, 1+n, "one segment per append")
	tree := ok(t, append([]string{"tree"}, sel...)...)
	require.Contains(t, tree, fmt.Sprintf("branch point: %d branches", n))
}

func testVerify(t *testing.T, b backend) {
	store := b.fresh(t)
	add := func(session, stdin string) {
		t.Helper()
		// --force: these sessions are broken on purpose, which append refuses.
		r := cliWith(t, cmdOpts{stdin: stdin}, "append", "--force", "--store", store, "--agent", "a", "--session", session)
		require.Equal(t, 0, r.code, r.stderr)
	}
	add("good", headerLine("good")+"\n"+entryLine("g1", "")+"\n"+entryLine("g2", "g1")+"\n")
	out := ok(t, "verify", "--store", store)
	require.Equal(t, "0 problems in 1 segment of 1 session (2 entries, not counting 1 session header)\n", out)

	add("dangling", headerLine("dangling")+"\n"+entryLine("d1", "")+"\n"+entryLine("d2", "gone")+"\n")
	add("conflict", headerLine("conflict")+"\n"+entryLine("c1", "")+"\n")
	add("conflict", strings.Replace(entryLine("c1", ""), `"n":"c1"`, `"n":"other"`, 1)+"\n")
	add("cycle", headerLine("cycle")+"\n"+entryLine("x", "y")+"\n"+entryLine("y", "x")+"\n")
	// A session whose first segment, the one with its header, is lost: restore
	// and export refuse it, so verify must not pass it.
	add("headless", entryLine("h1", "")+"\n"+entryLine("h2", "h1")+"\n")
	before := b.snapshot(t, store)
	r := cli(t, "verify", "--store", store)
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stdout, "default/a/dangling: ")
	require.Contains(t, r.stdout, "dangling parent: entry d2 has parentId gone")
	require.Contains(t, r.stdout, "default/a/conflict: ")
	require.Contains(t, r.stdout, "id conflict: entry c1")
	require.Contains(t, r.stdout, "cycle: entries [x y]")
	require.Contains(t, r.stdout, "default/a/headless: no session header: its 2 entries cannot be restored or exported")
	require.Contains(t, r.stdout, "4 problems in 6 segments of 5 sessions")
	var sum verifySummary
	r = cli(t, "verify", "--store", store, "--json")
	require.Equal(t, 1, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Len(t, sum.Problems, 4)
	r = cli(t, "verify", "--store", store, "--agent", "a", "--session", "good")
	require.Equal(t, 0, r.code, r.stdout)
	require.Equal(t, before, b.snapshot(t, store), "verify changes nothing")

	if b.name != "file" {
		return
	}
	// A flipped byte in a segment file is corruption.
	dir := strings.TrimPrefix(store, "file://")
	var seg string
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, "default", "a", "good"), func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".jsonl.zst") {
			seg = p
		}
		return err
	}))
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	data[len(data)-5] ^= 0xff
	require.NoError(t, os.WriteFile(seg, data, 0o644))
	r = cli(t, "verify", "--store", store, "--session", "good")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, "default/a/good: "+strings.TrimPrefix(seg, dir+"/"))
	require.Contains(t, r.stdout, "1 problem in 1 segment of 1 session")
}

func testRestore(t *testing.T, b backend) {
	v3, v1 := fixture(t, fixtureV3), fixture(t, fixtureV1)
	store := b.fresh(t)
	ok(t, "import", "--store", store, "--agent", "coder", "--session", "v3", v3)
	ok(t, "import", "--store", store, "--agent", "coder", "--session", "v1", v1)
	ok(t, "import", "--store", store, "--agent", "other", "--session", "v3", v3)
	ok(t, "import", "--store", store, "--ns", "acme", "--agent", "coder", "--session", "v3", v3)
	before := b.snapshot(t, store)

	out := t.TempDir()
	r := cli(t, "restore", "--store", store, "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr, "no progress bar when stderr is not a terminal")
	require.Contains(t, r.stdout, "restored 3, skipped 0 (identical), failed 0 of 3 sessions")

	// Resumable: a second run skips what is restored and identical; a damaged file
	// is rewritten.
	var sum restoreSummary
	r = cli(t, "restore", "--store", store, "--out", out, "--json", "--parallel", "2")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, 3, sum.Skipped)
	require.Zero(t, sum.Restored)
	ctxFile := sessiontree.FilesOf(out, transcript.TranscriptRef{AgentID: "coder", SessionID: "v1"}).Context
	require.NoError(t, os.Truncate(ctxFile, 10))
	r = cli(t, "restore", "--store", store, "--out", out, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, restoreSummary{Out: out, Sessions: 3, Restored: 1, Skipped: 2, Entries: 12 + 6 + 12, Bytes: sum.Bytes,
		Seconds: sum.Seconds, Failures: []restoreFailure{}}, sum)

	// A log holding an entry the bucket lacks is not replaced without --force.
	logFile := sessiontree.FilesOf(out, transcript.TranscriptRef{AgentID: "coder", SessionID: "v3"}).Log
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(entryLine("local-only", "") + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	r = cli(t, "restore", "--store", store, "--out", out, "--agent", "coder", "--session", "v3")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, "failed default/coder/v3: ")
	require.Contains(t, r.stdout, "local-only")
	r = cli(t, "restore", "--store", store, "--out", out, "--agent", "coder", "--session", "v3", "--force")
	require.Equal(t, 0, r.code, r.stdout)
	require.Contains(t, r.stdout, "restored 1, skipped 0")

	// Only the selected namespace; the layout is the SessionTree's.
	var files []string
	require.NoError(t, filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			files = append(files, rel)
		}
		return err
	}))
	var want []string
	for _, sel := range [][2]string{{"coder", "v1"}, {"coder", "v3"}, {"other", "v3"}} {
		f := sessiontree.FilesOf("", transcript.TranscriptRef{AgentID: sel[0], SessionID: sel[1]})
		want = append(want, f.Context, f.Log, f.Segments, f.Origins)
	}
	require.ElementsMatch(t, want, files)

	// A SessionTree opened on the restored files sees the store's entries and context.
	ctx := context.Background()
	for _, sel := range [][2]string{{"coder", "v3"}, {"coder", "v1"}, {"other", "v3"}} {
		tree, rep, err := sessiontree.Load(ctx, sessiontree.Config{Root: out}, sessiontree.Identity{}, sel[0], sel[1])
		require.NoError(t, err)
		require.True(t, rep.Clean())
		_, err = tree.MergeLog(ctx)
		require.NoError(t, err)
		args := []string{"--store", store, "--agent", sel[0], "--session", sel[1]}
		require.Equal(t, ok(t, append([]string{"context"}, args...)...), string(tree.BuildContext().JSON())+"\n")
		var exported bytes.Buffer
		require.NoError(t, tree.Export(&exported))
		require.Equal(t, ok(t, append([]string{"export"}, args...)...), exported.String())
	}

	// --ns acme restores that namespace only.
	acme := t.TempDir()
	r = cli(t, "restore", "--store", store, "--ns", "acme", "--out", acme)
	require.Equal(t, 0, r.code, r.stderr)
	_, err = os.Stat(sessiontree.FilesOf(acme, transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "v3"}).Context)
	require.NoError(t, err)
	require.Equal(t, before, b.snapshot(t, store), "restore reads only")
}

func testDemo(t *testing.T, b backend) {
	store := b.fresh(t)
	r := cli(t, "demo", "--store", store, "--replicas", "4", "--turns", "3", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var sum demoSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, 4, sum.Replicas)
	require.Equal(t, 2+4*3*2, sum.EntriesWritten)
	require.Equal(t, sum.EntriesWritten+1, sum.Entries, "every entry lands, plus the header")
	require.Equal(t, 1+4*3, sum.Segments["L0"], "one segment per flush")
	require.Equal(t, 1, sum.SegmentsCompact["L1"], "compacted into one segment")
	require.True(t, sum.ContextMatches)
	require.Equal(t, sum.Entries, sum.RestoredEntries)
	require.Positive(t, sum.ContextMessages)
	require.GreaterOrEqual(t, sum.Leaves, 1)

	// The demo's session is an ordinary session for every other command.
	sel := []string{"--store", store, "--agent", "demo-agent", "--session", strings.TrimPrefix(sum.Session, "default/demo-agent/")}
	require.Len(t, strings.Split(strings.TrimSpace(ok(t, append([]string{"cat"}, sel...)...)), "\n"), sum.Entries)
	require.Contains(t, ok(t, "verify", "--store", store), "0 problems")
	tree := ok(t, append([]string{"tree"}, sel...)...)
	require.Contains(t, tree, "[replica-4-", "the tree names the replicas (their level-0 inputs are still stored)")
}

// TestDemo_DefaultStore is the quick start: with no flags the demo writes to
// ./transcripts beside the caller and prints a human summary.
func TestDemo_DefaultStore(t *testing.T) {
	dir := t.TempDir()
	r := cliWith(t, cmdOpts{dir: dir}, "demo")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	for _, want := range []string{"3 replicas x 3 turns", "union: 21 entries", "compacted: ", "branch points", "matches the union: true", "time: "} {
		require.Contains(t, r.stdout, want)
	}
	_, err := os.Stat(filepath.Join(dir, "transcripts", "default", "demo-agent"))
	require.NoError(t, err, "the default store is ./transcripts")
	r = cliWith(t, cmdOpts{dir: dir}, "ls")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "demo-agent")
	// TRANSCRIPT_STORE replaces the default.
	other := t.TempDir()
	r = cliWith(t, cmdOpts{dir: dir, env: []string{"TRANSCRIPT_STORE=file://" + other}}, "demo", "--replicas", "1", "--turns", "1")
	require.Equal(t, 0, r.code, r.stderr)
	_, err = os.Stat(filepath.Join(other, "default", "demo-agent"))
	require.NoError(t, err)
}

// TestDemo_MemStoreSuggestsNoLaterCommand: a mem:// store ends with the demo, so
// the demo does not suggest a later command on it, which would find nothing.
func TestDemo_MemStoreSuggestsNoLaterCommand(t *testing.T) {
	r := cli(t, "demo", "--store", "mem://", "--replicas", "1", "--turns", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "next: transcript tree --store 'mem://'")
	require.Contains(t, r.stdout, "next: the mem:// store ended with the demo")
}

// TestCLI_StoreLimits: import and append store an entry dated 2300-01-01 and one
// of 20 MiB, and refuse one of 70 MiB naming the limit, storing nothing.
func TestCLI_StoreLimits(t *testing.T) {
	store := "file://" + t.TempDir()
	dir := t.TempDir()
	header := `{"type":"session","version":3,"id":"limits","timestamp":"2300-01-01T00:00:00.000Z","cwd":"/w"}`
	e1 := `{"type":"message","id":"e1","parentId":null,"timestamp":"2300-01-01T00:00:00.000Z","message":{"role":"user","content":"later"}}`
	e2 := `{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","content":"` + strings.Repeat("x", 20<<20) + `"}}`
	huge := `{"type":"message","id":"e3","parentId":"e2","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","content":"` + strings.Repeat("y", 70<<20) + `"}}`
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
		return p
	}

	ok(t, "import", "--store", store, "--agent", "a", "--session", "ok", write("ok.jsonl", header, e1, e2))
	out := ok(t, "cat", "--store", store, "--agent", "a", "--session", "ok")
	require.Contains(t, out, `"id":"e1"`)
	require.Contains(t, out, `"id":"e2"`)

	r := cli(t, "import", "--store", store, "--agent", "a", "--session", "huge", write("huge.jsonl", header, e1, huge))
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "64 MiB")
	r = cli(t, "cat", "--store", store, "--agent", "a", "--session", "huge")
	require.NotEqual(t, 0, r.code, "nothing of a refused import is stored")

	appendTo := func(session, stdin string) result {
		return cliWith(t, cmdOpts{stdin: stdin}, "append", "--store", store, "--agent", "a", "--session", session)
	}
	r = appendTo("app", header+"\n"+e1+"\n"+e2+"\n")
	require.Equal(t, 0, r.code, r.stderr)
	r = appendTo("app2", header+"\n"+e1+"\n"+huge+"\n")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "64 MiB")
	require.NotEqual(t, 0, cli(t, "cat", "--store", store, "--agent", "a", "--session", "app2").code)
}

// freePort returns a TCP port free on 127.0.0.1 right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return port
}
