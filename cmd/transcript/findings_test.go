package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// The tests in this file pin what an operator sees on the command line: the exit
// code, which stream a message goes to, and the message.

// storeWithSessions returns the URL of a directory store holding n sessions of agent
// "a" (s000, s001, ...), each a session header and a chain of two entries in one
// segment.
func storeWithSessions(t *testing.T, n int) (url, dir string) {
	t.Helper()
	dir = t.TempDir()
	url = "file://" + dir
	s := openStoreAt(t, url)
	w, err := transcript.NewWriter("test-writer")
	require.NoError(t, err)
	for i := range n {
		ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: fmt.Sprintf("s%03d", i)}
		header := fmt.Sprintf(`{"type":"session","version":3,"id":"h%03d","timestamp":"2026-09-25T22:28:55.488Z","cwd":"/"}`, i)
		_, err := s.AppendSegment(t.Context(), ref, [][]byte{[]byte(header), []byte(entryLine("e1", "")), []byte(entryLine("e2", "e1"))}, w)
		require.NoError(t, err)
	}
	return url, dir
}

func TestFindings_UsageErrors(t *testing.T) {
	store, _ := storeWithSessions(t, 1)
	tests := []struct {
		name   string
		args   []string
		stderr string // substring of stderr
	}{
		{"mistyped command", []string{"lss"}, `unknown command "lss" (did you mean "ls"?)`},
		{"help for an unknown command", []string{"help", "nope"}, `unknown command "nope"`},
		{"mistyped flag", []string{"ls", "--store", store, "--sesion", "x"}, "unknown flag --sesion (did you mean --session?)"},
		{"Go-style single-dash flag", []string{"ls", "--store", store, "-session", "x"}, "unknown flag -session (did you mean --session?)"},
		{"mistyped flag before the command", []string{"--agnet", "a", "ls"}, "unknown flag --agnet before the command (did you mean --agent?)"},
		{"store without a scheme", []string{"ls", "--store", "/tmp/x"}, "no scheme"},
		{"store of an unknown scheme", []string{"ls", "--store", "ftp://x"}, `unknown scheme "ftp"`},
		{"bad timeout", []string{"ls", "--store", "s3://bucket?timeout=soon"}, "timeout must be a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, tt.args...)
			require.Equal(t, 2, r.code, "stderr %s", r.stderr)
			require.Empty(t, r.stdout)
			require.Contains(t, r.stderr, tt.stderr)
			require.LessOrEqual(t, strings.Count(r.stderr, "\n"), 2, "a usage error is short, not the whole usage: %s", r.stderr)
		})
	}
}

func TestFindings_HelpSpellsFlagsAsTheReadme(t *testing.T) {
	r := cli(t, "help", "ls")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "--agent ID")
	require.Contains(t, r.stdout, "--store URL")
	require.NotRegexp(t, regexp.MustCompile(`(?m)^\s+-[a-z]{2,}`), r.stdout, "no Go-style -flag in help")
}

func TestFindings_GlobalFlagsBeforeTheCommand(t *testing.T) {
	store, _ := storeWithSessions(t, 2)
	before := ok(t, "--store", store, "--agent", "a", "ls")
	require.Equal(t, ok(t, "ls", "--store", store, "--agent", "a"), before)
	require.Contains(t, before, "s001")
	require.Contains(t, ok(t, "--store="+store, "--json", "ls", "--session", "s001"), `"session":"s001"`)
}

func TestFindings_NamespaceNotFound(t *testing.T) {
	store, _ := storeWithSessions(t, 1)
	empty := "file://" + t.TempDir()
	missing := filepath.Join(t.TempDir(), "typo", "x")
	tests := []struct {
		name, store, stderr string
	}{
		{"store with another namespace", store, `namespace "nope": not found (the store has one other namespace: --ns default)`},
		{"empty store", empty, `namespace "nope": not found (the store is empty)`},
		{"missing store directory", "file://" + missing, "store file://" + missing + " not found: no directory " + missing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli(t, "ls", "--store", tt.store, "--ns", "nope")
			require.Equal(t, 1, r.code)
			require.Empty(t, r.stdout)
			require.Equal(t, "Error: "+tt.stderr+"\n", r.stderr)
		})
	}
	require.NoDirExists(t, filepath.Dir(missing))
}

func TestFindings_ReadOnlyCommandsCreateNothing(t *testing.T) {
	parent := t.TempDir()
	missing := filepath.Join(parent, "typo", "x")
	sel := []string{"--agent", "a", "--session", "s"}
	for _, args := range [][]string{
		{"ls"}, {"verify"}, {"stats"},
		append([]string{"cat"}, sel...), append([]string{"tree"}, sel...),
		append([]string{"context"}, sel...), append([]string{"export"}, sel...),
		{"restore", "--out", filepath.Join(parent, "out")},
	} {
		t.Run(args[0]+" with --store", func(t *testing.T) {
			r := cli(t, append(args, "--store", "file://"+missing)...)
			require.Equal(t, 1, r.code, r.stderr)
			require.Empty(t, r.stdout)
			require.Contains(t, r.stderr, "not found: no directory "+missing)
			require.NotContains(t, r.stderr, "session header", "a missing store is not a session without its header")
		})
		t.Run(args[0]+" with the default store", func(t *testing.T) {
			wd := t.TempDir()
			r := cliWith(t, cmdOpts{dir: wd}, args...)
			require.Equal(t, 1, r.code, r.stderr)
			require.Contains(t, r.stderr, "store file://./transcripts not found: no directory "+filepath.Join(wd, "transcripts"))
			entries, err := os.ReadDir(wd)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing is created in the working directory")
		})
	}
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Empty(t, entries, "no command created the store or --out")
}

// A session that does not exist is "not found" in the same words for export as for
// cat; "(or it has no session header)" is only for segments without their header.
func TestFindings_ExportOfAMissingSession(t *testing.T) {
	store, _ := storeWithSessions(t, 1)
	for _, cmd := range []string{"cat", "export"} {
		r := cli(t, cmd, "--store", store, "--agent", "a", "--session", "nope")
		require.Equal(t, 1, r.code, r.stderr)
		require.Equal(t, "Error: session default/a/nope: not found\n", r.stderr, cmd)
	}
}

func TestFindings_ContextAtAnUnknownLeaf(t *testing.T) {
	v3 := fixture(t, fixtureV3)
	store := "file://" + t.TempDir()
	sel := []string{"--store", store, "--agent", "coder", "--session", "s1"}
	ok(t, append(append([]string{"import"}, sel...), v3)...)
	r := cli(t, append([]string{"context", "--leaf", "zzz"}, sel...)...)
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "Error: entry \"zzz\" (--leaf): not found\n", r.stderr)
	r = cli(t, "context", "--file", v3, "--leaf", "zzz")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, `entry "zzz" (--leaf): not found`)
}

func TestFindings_LsShowsHealthySessionsBesideACorruptOne(t *testing.T) {
	store, dir := storeWithSessions(t, 3)
	segs, err := filepath.Glob(filepath.Join(dir, "default", "a", "s001", "L0", "*.jsonl.zst"))
	require.NoError(t, err)
	require.Len(t, segs, 1)
	require.NoError(t, os.WriteFile(segs[0], []byte("not a segment"), 0o644))
	for _, asJSON := range []bool{false, true} {
		args := []string{"ls", "--store", store}
		if asJSON {
			args = append(args, "--json")
		}
		r := cli(t, args...)
		require.Equal(t, 1, r.code)
		require.Contains(t, r.stdout, "s000")
		require.Contains(t, r.stdout, "s002")
		require.NotContains(t, r.stdout, "s001")
		require.Contains(t, r.stderr, "Error: session default/a/s001: ")
		require.Contains(t, r.stderr, "(run transcript verify)")
	}
}

func TestFindings_RestoreInterruptedPrintsAPartialSummary(t *testing.T) {
	store, _ := storeWithSessions(t, 300)
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			out := t.TempDir()
			args := []string{"restore", "--store", store, "--out", out, "--parallel", "1"}
			if asJSON {
				args = append(args, "--json")
			}
			cmd := exec.Command(binary, args...)
			cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			// Interrupt as soon as the first session is in place.
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			first := sessiontree.FilesOf(out, transcript.TranscriptRef{AgentID: "a", SessionID: "s000"}).Context
			for {
				if _, err := os.Stat(first); err == nil {
					break
				}
				select {
				case <-done:
					t.Fatalf("restore ended before it was interrupted: %s %s", stdout.String(), stderr.String())
				case <-time.After(time.Millisecond):
				}
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			err := <-done
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, 1, ee.ExitCode(), "stderr %s", stderr.String())
			require.Contains(t, stderr.String(), "Error: restore interrupted after ")
			if asJSON {
				var sum restoreSummary
				require.NoError(t, json.Unmarshal(stdout.Bytes(), &sum), stdout.String())
				require.True(t, sum.Interrupted)
				require.Equal(t, 300, sum.Sessions)
				require.Positive(t, sum.Restored)
				require.Less(t, sum.Restored, 300)
				return
			}
			require.Regexp(t, `^interrupted: restored [1-9][0-9]*, skipped 0 \(identical\), failed 0 of 300 sessions`, stdout.String())
		})
	}
}

func TestFindings_Output(t *testing.T) {
	store, _ := storeWithSessions(t, 2)

	t.Run("ls --segments has a header", func(t *testing.T) {
		lines := strings.Split(strings.TrimSpace(ok(t, "ls", "--store", store, "--segments")), "\n")
		require.Len(t, lines, 3)
		require.Regexp(t, `^KEY +LEVEL +WRITER +BYTES$`, lines[0])
		require.Regexp(t, `^default/a/s000/L0/\S+ +L0 +test-writer +\d+$`, lines[1])
	})

	t.Run("stats aligns and pluralises", func(t *testing.T) {
		lines := strings.Split(strings.TrimRight(ok(t, "stats", "--store", store, "--session", "s000"), "\n"), "\n")
		col := -1
		for _, l := range lines[:7] {
			i := strings.LastIndex(l, "  ") + 2
			if col < 0 {
				col = i
			}
			require.Equal(t, col, i, "values start in one column: %q", l)
		}
		require.Regexp(t, `^  L0 +1 segment +\d+ bytes$`, lines[7])
	})

	t.Run("verify and restore count entries alike", func(t *testing.T) {
		v3 := fixture(t, fixtureV3)
		s := "file://" + t.TempDir()
		ok(t, "import", "--store", s, "--agent", "coder", "--session", "s1", v3)
		ok(t, "import", "--store", s, "--agent", "coder", "--session", "s2", v3)
		require.Contains(t, ok(t, "verify", "--store", s), "(24 entries, not counting 2 session headers)")
		require.Contains(t, ok(t, "restore", "--store", s, "--out", t.TempDir()), "(24 entries, not counting session headers)")
		require.Regexp(t, `(?m)^default +coder +s1 +12 +1 `, ok(t, "ls", "--store", s))
	})
}

func TestFindings_DemoPrintsNoGoMaps(t *testing.T) {
	out := ok(t, "demo", "--store", "file://"+t.TempDir(), "--replicas", "2", "--turns", "1")
	require.NotContains(t, out, "map[")
	require.Regexp(t, `in \d+ segments \(L0 \d+\)`, out)
	require.Regexp(t, `stored now: L0 \d+, L1 1`, out)
}

// TestFindings_S3RequestTimeout points the command at a server that accepts
// connections and never answers: with ?timeout= in the URL it fails with that
// timeout instead of the default one, and prints the URL as it was written.
func TestFindings_S3RequestTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	url := "s3://transcripts/p?endpoint=" + l.Addr().String() + "&insecure=true&timeout=200ms"
	// Far below the default request timeout (30s): only the URL's timeout lets the
	// command finish within it.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "ls", "--store", url)
	cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=", "AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	require.NoError(t, ctx.Err(), "the command did not fail within the URL's timeout")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, stderr.String(), "endpoint="+l.Addr().String(), "the URL is printed readable")
	require.NotContains(t, stderr.String(), "%3A")
}

// TestFindings_ReadOnlyCommandsCreateNoBucket: create=true in the URL of a command
// that only reads does not make the bucket, and the error says "not found" without
// suggesting create (which a read ignores); a command that writes, given a URL
// without create=true, says how to make it.
func TestFindings_ReadOnlyCommandsCreateNoBucket(t *testing.T) {
	url := s3Backend().fresh(t) // a bucket that does not exist yet, with create=true
	// Twice: the first run did not create it.
	for range 2 {
		r := cli(t, "ls", "--store", url)
		require.Equal(t, 1, r.code, r.stderr)
		require.Empty(t, r.stdout)
		require.Regexp(t, `^Error: store s3://\S+: bucket "transcript-cli-[0-9-]+": not found\n$`, r.stderr)
	}
	noCreate := strings.Replace(url, "&create=true", "", 1)
	r := cliWith(t, cmdOpts{stdin: headerLine("h") + "\n"}, "append", "--store", noCreate, "--agent", "a", "--session", "s")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "not found (add create=true to the store URL to make it)")
}
