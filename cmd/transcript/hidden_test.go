package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// hiddenStore returns the URL of a new MinIO store holding sessions (of agent
// coder, each with a header and one entry) and then an object named hider, as an
// S3 tool writes it when it copies a file to default/coder/s1 while the
// session's segments are under default/coder/s1/: MinIO lists nothing under
// the prefix the object hides.
func hiddenStore(t *testing.T, hider string, sessions ...string) string {
	t.Helper()
	b := s3test.NewS3Bucket(t, "hg-hide-")
	endpoint, _, _ := s3test.S3Endpoint(t)
	store := fmt.Sprintf("s3://%s?endpoint=%s&insecure=true", b.Name(), endpoint)
	for _, sid := range sessions {
		r := cliWith(t, cmdOpts{stdin: headerLine(sid) + "\n" + entryLine("e1", "") + "\n"},
			"append", "--store", store+"&create=true", "--agent", "coder", "--session", sid)
		require.Equal(t, 0, r.code, r.stderr)
	}
	require.NoError(t, b.Put(t.Context(), hider, strings.NewReader("x"), 1, bucket.PutOptions{}))
	return store
}

// TestHiddenSession_EveryCommandNamesTheObject: when an object named like a
// session's (or its agent's) key prefix hides the only session asked for,
// every command that reads sessions fails naming what was asked and the
// object, as ls did alone: cat, export, context, tree and restore --session
// said `session ...: not found`, stats and restore `agent "" in namespace
// "default": not found`. (MinIO still lists a session's own prefix under a
// hidden agent's: what reads the one session named then finds it.)
func TestHiddenSession_EveryCommandNamesTheObject(t *testing.T) {
	for _, hider := range []string{"default/coder/s1", "default/coder"} {
		t.Run(hider, func(t *testing.T) {
			store := hiddenStore(t, hider, "s1")
			hint := "an object named like a key prefix of the store, " + hider + ", which hides"
			one := []string{"--agent", "coder", "--session", "s1"}
			out := filepath.Join(t.TempDir(), "out")
			tests := []struct {
				args []string
				what string
			}{
				{append([]string{"cat"}, one...), "session default/coder/s1: not found"},
				{append([]string{"export"}, one...), "session default/coder/s1: not found"},
				{append([]string{"context"}, one...), "session default/coder/s1: not found"},
				{append([]string{"tree"}, one...), "session default/coder/s1: not found"},
				{append([]string{"restore", "--out", out}, one...), "session default/coder/s1: not found"},
				{[]string{"restore", "--out", out}, `sessions in namespace "default": not found`},
				{[]string{"ls"}, `sessions in namespace "default": not found`},
				{[]string{"stats"}, `sessions in namespace "default": not found`},
				{[]string{"stats", "--agent", "coder"}, `agent "coder" in namespace "default": not found`},
			}
			for _, tt := range tests {
				t.Run(strings.ReplaceAll(strings.Join(tt.args, " "), out, "DIR"), func(t *testing.T) {
					r := cli(t, append(append([]string{}, tt.args...), "--store", store)...)
					if hider == "default/coder" && tt.args[0] != "restore" && tt.what == "session default/coder/s1: not found" {
						// MinIO lists a session's own prefix under a hidden agent's:
						// what reads the one session named finds it.
						require.Equal(t, 0, r.code, r.stderr)
						return
					}
					require.Equal(t, 1, r.code, r.stdout)
					require.Contains(t, r.stderr, tt.what)
					require.Contains(t, r.stderr, hint)
				})
			}
		})
	}
}

// TestHiddenSession_VerifyNamesTheObject: verify names an object that hides
// a session as a problem (exit 1): when it hides every session asked for, it
// used to fail as ls did (`agent "" in namespace "default": not found`),
// naming nothing; when others are listed, it names the object as outside every
// session and says what it hides.
func TestHiddenSession_VerifyNamesTheObject(t *testing.T) {
	one := []string{"--agent", "coder", "--session", "s1"}
	for _, hider := range []string{"default/coder/s1", "default/coder"} {
		t.Run(hider, func(t *testing.T) {
			store := hiddenStore(t, hider, "s1")
			where, kind := "default/coder", "session"
			if hider == "default/coder" {
				where, kind = "default", "agent"
			}
			problem := fmt.Sprintf("%s: %s: not part of the store's key layout, outside every session (readers ignore it); "+
				"named like the key prefix of %s %s, it hides every segment stored under %s/", where, hider, kind, hider, hider)
			for _, args := range [][]string{nil, {"--agent", "coder"}, one} {
				t.Run(strings.Join(append([]string{"verify"}, args...), " "), func(t *testing.T) {
					r := cli(t, append([]string{"verify", "--store", store}, args...)...)
					require.Equal(t, 1, r.code, r.stderr)
					require.Empty(t, r.stderr, "the object is a problem verify names, not a failure")
					require.Contains(t, r.stdout, problem)
					require.Contains(t, r.stdout, "1 problem in 0 segments of 0 sessions")
				})
			}
			t.Run("verify --json", func(t *testing.T) {
				r := cli(t, "verify", "--store", store, "--json")
				require.Equal(t, 1, r.code, r.stderr)
				require.Contains(t, r.stdout, fmt.Sprintf(`"session":%q,"key":%q`, where, hider))
			})
		})
	}
	t.Run("others listed", func(t *testing.T) {
		store := hiddenStore(t, "default/coder/s1", "s1", "s2")
		r := cli(t, "verify", "--store", store)
		require.Equal(t, 1, r.code, r.stderr)
		require.Contains(t, r.stdout, "default/coder: default/coder/s1: not part of the store's key layout")
		require.Contains(t, r.stdout, "named like the key prefix of session default/coder/s1, it hides every segment stored under default/coder/s1/")
		require.Contains(t, r.stdout, "1 problem in 1 segment of 1 session")
	})
}

// TestHiddenSession_LsWarns: when other sessions are still listed, ls used to
// leave the hidden one out silently; it lists the others and warns of the
// object on stderr (exit 0).
func TestHiddenSession_LsWarns(t *testing.T) {
	store := hiddenStore(t, "default/coder/s1", "s1", "s2")
	warning := "Warning: sessions may be missing: the bucket holds an object named like a key prefix of the store, default/coder/s1, which hides"
	for _, args := range [][]string{nil, {"--json"}, {"--segments"}, {"--agent", "coder"}} {
		t.Run(strings.Join(append([]string{"ls"}, args...), " "), func(t *testing.T) {
			r := cli(t, append([]string{"ls", "--store", store}, args...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "s2")
			require.NotContains(t, r.stdout, "s1")
			require.Contains(t, r.stderr, warning)
		})
	}
	t.Run("ls --session s2", func(t *testing.T) {
		require.Contains(t, ok(t, "ls", "--store", store, "--agent", "coder", "--session", "s2"), "s2")
	})
}

// TestHiddenSession_RestoreFails: a restore of a namespace where an object
// hides one session of several restores the others and exits 1 naming the
// object (text and --json): the restored folder lacks a session the bucket
// holds, so the run is not whole. It used to exit 0 without a word, and an
// operator restoring after a disaster lost that session unawares.
func TestHiddenSession_RestoreFails(t *testing.T) {
	store := hiddenStore(t, "default/coder/s1", "s1", "s2")
	for _, layout := range []string{"sessiontree", "pi"} {
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", layout, asJSON), func(t *testing.T) {
				args := []string{"restore", "--store", store, "--out", t.TempDir(), "--layout", layout}
				if asJSON {
					args = append(args, "--json")
				}
				r := cli(t, args...)
				require.Equal(t, 1, r.code, "stdout %s stderr %s", r.stdout, r.stderr)
				if asJSON {
					var sum struct {
						Restored int      `json:"restored"`
						Hidden   []string `json:"hidden"`
					}
					require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout)
					requireSchema(t, "transcript.restore", strings.TrimSuffix(r.stdout, "\n"))
					require.Equal(t, 1, sum.Restored)
					require.Equal(t, []string{"default/coder/s1"}, sum.Hidden)
					return
				}
				require.Contains(t, r.stdout, "restored 1,")
				require.Contains(t, r.stdout, "hidden default/coder/s1: the bucket holds an object named like a key prefix of the store")
			})
		}
	}
	t.Run("--session s2", func(t *testing.T) {
		r := cli(t, "restore", "--store", store, "--out", t.TempDir(), "--agent", "coder", "--session", "s2")
		require.Equal(t, 0, r.code, r.stderr)
	})
}
