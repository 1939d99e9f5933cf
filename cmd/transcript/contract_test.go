package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
)

// binaryCommands are the commands of each binary ("" for the binary itself).
var binaryCommands = map[string][]string{
	"transcript":         {"", "demo", "import", "export", "append", "cat", "context", "tree", "ls", "follow", "restore", "verify", "stats", "outbox"},
	"transcript-compact": {""},
	"transcript-serve":   {"", "serve", "token"},
	"transcript-bench":   {""},
}

// TestContract_HelpVersionAndWrongFlags runs every command of the four binaries
// with --help, with --version and with a flag it does not have, and checks the
// contract README.md states for all of them: help and the version on stdout
// (nothing on stderr) with exit 0; a wrong flag a usage error on stderr (nothing
// on stdout) that names the flag, with exit 2.
func TestContract_HelpVersionAndWrongFlags(t *testing.T) {
	for bin, cmds := range binaryCommands {
		path := builtBinary(t, bin)
		for _, cmd := range cmds {
			words := []string{}
			if cmd != "" {
				words = append(words, cmd)
			}
			name := strings.Join(append([]string{bin}, words...), " ")
			t.Run(name, func(t *testing.T) {
				help := runBinary(t, path, "", append(words, "--help")...)
				require.Equal(t, 0, help.code, "%s --help: %s", name, help.stderr)
				require.Empty(t, help.stderr, "%s --help", name)
				require.Contains(t, help.stdout, "Usage:", "%s --help", name)
				require.Contains(t, help.stdout, "--version", "%s --help lists --version", name)

				version := runBinary(t, path, "", append(words, "--version")...)
				require.Equal(t, 0, version.code, "%s --version: %s", name, version.stderr)
				require.Empty(t, version.stderr, "%s --version", name)
				require.Regexp(t, `^`+bin+` \S+, commit \S+.*, `+runtime.Version()+"\n$", version.stdout, "%s --version", name)

				wrong := runBinary(t, path, "", append(words, "--no-such-flag")...)
				require.Equal(t, 2, wrong.code, "%s --no-such-flag: %s", name, wrong.stderr)
				require.Empty(t, wrong.stdout, "%s --no-such-flag", name)
				require.Regexp(t, `^Error: .*unknown flag --no-such-flag.*\nRun '`+bin+` .*' for usage\.\n$`, wrong.stderr, "%s --no-such-flag", name)
			})
		}
	}
	t.Run("transcript help COMMAND", func(t *testing.T) {
		for _, cmd := range binaryCommands["transcript"][1:] {
			r := cli(t, "help", cmd)
			require.Equal(t, 0, r.code, cmd)
			require.Empty(t, r.stderr, cmd)
			require.Equal(t, cli(t, cmd, "--help").stdout, r.stdout, "help %s is %s --help", cmd, cmd)
		}
	})
	t.Run("transcript without a command", func(t *testing.T) {
		r := cli(t)
		require.Equal(t, 2, r.code)
		require.Empty(t, r.stdout, "a usage error prints nothing on stdout")
		require.Contains(t, r.stderr, "no command given")
	})
}

// TestContract_NotFoundInEveryBinary: a store that does not exist is "not found"
// with exit 1 in each of the four binaries, and none of them creates it unless
// it writes and the URL says create=true.
func TestContract_NotFoundInEveryBinary(t *testing.T) {
	endpoint, _, _ := s3test.S3Endpoint(t)
	bucketURL := fmt.Sprintf("s3://transcript-missing-%d-%d/p?endpoint=%s&insecure=true", os.Getpid(), time.Now().UnixNano(), endpoint)
	missingDir := "file://" + filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		bin  string
		args []string
		env  []string
	}{
		{"transcript", []string{"ls", "--store", bucketURL}, nil},
		{"transcript", []string{"ls", "--store", bucketURL + "&create=true"}, nil},
		{"transcript", []string{"ls", "--store", missingDir}, nil},
		{"transcript", []string{"append", "--store", bucketURL, "--agent", "a", "--session", "s"}, nil},
		{"transcript", []string{"follow", "--once", "--store", bucketURL, "--state-dir", t.TempDir(), t.TempDir()}, nil},
		{"transcript-compact", []string{"--store", bucketURL}, nil},
		{"transcript-compact", []string{"--store", missingDir}, nil},
		{"transcript-serve", []string{"serve", "--addr", "127.0.0.1:0", "--store", bucketURL}, []string{"TRANSCRIPT_JWT_KEY=" + strings.Repeat("k", 32)}},
		{"transcript-bench", []string{"--quick", "--items", "1", "--store", bucketURL}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.bin+" "+tt.args[0], func(t *testing.T) {
			r := cliWith(t, cmdOpts{bin: builtBinary(t, tt.bin), env: tt.env, stdin: headerLine("s") + "\n"}, tt.args...)
			require.Equal(t, 1, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
			require.Empty(t, r.stdout)
			require.Regexp(t, `^Error: store \S+( not found: no directory \S+|: bucket "transcript-missing-[0-9-]+": not found.*)\n$`, r.stderr)
		})
	}
	require.NoDirExists(t, strings.TrimPrefix(missingDir, "file://"))
}
