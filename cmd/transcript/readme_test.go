//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeBlock is a shell code block of README.md.
type readmeBlock struct {
	run   bool // marked <!-- readme:run -->: runs as written on a fresh copy
	minio bool // marked <!-- readme:run minio -->: runs too, and needs the test MinIO
	lines []string
}

// readmeShellBlocks returns the ```sh blocks of the README at path, continuation
// lines joined.
func readmeShellBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var (
		blocks  []readmeBlock
		cur     *readmeBlock
		marked  bool
		minio   bool
		pending string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case cur == nil && (line == "<!-- readme:run -->" || line == "<!-- readme:run minio -->"):
			marked, minio = true, strings.Contains(line, "minio")
		case cur == nil && line == "```sh":
			cur = &readmeBlock{run: marked, minio: marked && minio}
			marked = false
		case cur == nil:
			if line != "" {
				marked = false
			}
		case line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case strings.HasSuffix(line, "\\"):
			pending += strings.TrimSuffix(line, "\\") + " "
		default:
			cur.lines = append(cur.lines, pending+line)
			pending = ""
		}
	}
	require.NoError(t, sc.Err())
	return blocks
}

// freshCopy copies the repository's files (tracked, and untracked ones git does not
// ignore) into a new directory, as a fresh clone holds them.
func freshCopy(t *testing.T, root string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "repo")
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		fi, err := os.Lstat(src)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		require.NoError(t, err)
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dst, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dst, name), b, fi.Mode().Perm()))
	}
	return dst
}

// ourCommand matches a README line that runs one of the project's commands.
var ourCommand = regexp.MustCompile(`^(bin/)?transcript(-compact|-bench|-serve)?( |$)`)

// TestReadme_CommandsRunAsWritten runs the README's marked shell blocks, in order, on
// a fresh copy of the repository (building the binaries as the README says), each
// in one shell, then checks every other command line of the README against the
// built binaries: the same arguments with --help appended must parse (exit 0), so
// every command and flag the README shows exists. A block marked
// <!-- readme:run minio --> (the server's) starts MinIO with deploy/minio/minio.sh
// and needs it built: it runs when TRANSCRIPT_TEST_S3_ENDPOINT is set, and always
// under CI=true; the server it starts gets a free port through $PORT.
func TestReadme_CommandsRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the commands in a fresh copy")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := freshCopy(t, root)
	env := append(os.Environ(), "TRANSCRIPT_STORE=", "PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PORT="+freePort(t))
	withMinIO := os.Getenv("TRANSCRIPT_TEST_S3_ENDPOINT") != "" || os.Getenv("CI") == "true"
	blocks := readmeShellBlocks(t, filepath.Join(dir, "README.md"))
	ran, ranMinIO := 0, 0
	for _, b := range blocks {
		if !b.run {
			continue
		}
		if b.minio && !withMinIO {
			t.Logf("not run without MinIO (set TRANSCRIPT_TEST_S3_ENDPOINT):\n%s", strings.Join(b.lines, "\n"))
			continue
		}
		script := strings.Join(b.lines, "\n")
		out, err := runBlock(t, dir, env, script)
		require.NoError(t, err, "README block:\n%s\noutput:\n%s", script, out)
		ran++
		if b.minio {
			ranMinIO++
			require.Contains(t, out, `"id":"chat-1"`, "the server block created and listed chat-1:\n%s", out)
		}
	}
	require.GreaterOrEqual(t, ran, 3, "the quick start, the look around and the compaction blocks run")
	if withMinIO {
		require.Equal(t, 1, ranMinIO, "the server block ran")
	}
	require.FileExists(t, filepath.Join(dir, "bin", "transcript"))

	checked := 0
	for _, b := range blocks {
		if b.run {
			continue
		}
		for _, line := range b.lines {
			if !ourCommand.MatchString(line) {
				continue
			}
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			cmd := exec.Command("bash", "-c", line+" --help")
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "README command %q does not parse:\n%s", line, out)
			checked++
		}
	}
	require.Positive(t, checked)
}

// runBlock runs script in one bash (-euo pipefail) in dir, in a process group of
// its own that is killed when the script ends or after five minutes, so that a
// server it left running cannot outlive it (or hold its output open).
func runBlock(t *testing.T, dir string, env []string, script string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever the block left behind
	}
	return out.String(), err
}

// mdLink matches a Markdown link or image target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocs_LinksResolveInsideTheRepository: every relative link of every Markdown
// file names a file of the repository, and none leaves it.
func TestDocs_LinksResolveInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out, err := exec.Command("git", "-C", root, "ls-files", "-co", "--exclude-standard", "*.md").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	checked := 0
	for _, name := range strings.Fields(string(out)) {
		b, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		// The team's notes beside a checkout are not part of it (spelled in two
		// pieces so this file does not name that folder itself).
		require.NotContains(t, string(b), "../"+"shared", name)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			abs := filepath.Join(root, filepath.Dir(name), target)
			rel, err := filepath.Rel(root, abs)
			require.NoError(t, err)
			require.False(t, strings.HasPrefix(rel, ".."), "%s links outside the repository: %s", name, m[1])
			_, err = os.Stat(abs)
			require.NoError(t, err, "%s links to %s", name, m[1])
			checked++
		}
	}
	require.Positive(t, checked)
}
