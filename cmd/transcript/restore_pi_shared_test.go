package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPiAgentFolder(t *testing.T) {
	tests := []struct {
		agent, want string
		ok          bool
	}{
		{agent: "--home-u-proj--", want: "--home-u-proj--", ok: true},
		{agent: "----", want: "----", ok: true}, // Pi's folder of cwd "/"
		{agent: "--a%25b--", want: "--a%b--", ok: true},
		{agent: "coder"},                     // follow --agent, import, the runtime
		{agent: "--"},                        // not "--<cwd>--"
		{agent: "--a-b"},                     // not "--<cwd>--"
		{agent: "--a%2Fb--"},                 // "/": not one folder
		{agent: "--a%b--"},                   // not an escape of PartName
		{agent: "--a%41--"},                  // PartName does not escape "A"
		{agent: "--home-u~0123456789abcdef"}, // shortened: cannot be read back
		{agent: "--" + strings.Repeat("x", 120) + "--"}, // its own name
	}
	tests[len(tests)-1].want, tests[len(tests)-1].ok = tests[len(tests)-1].agent, true
	for _, tt := range tests {
		t.Run(tt.agent[:min(len(tt.agent), 16)], func(t *testing.T) {
			got, ok := piAgentFolder(tt.agent)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRestore_PiLayoutSharedHeader: sessions stored under one Pi header never
// race for one path. A session file Pi resumed in another folder (moved there,
// pi --session FILE) is stored once per folder: each comes back into its own
// folder, whole. Sessions of one header whose agents are not Pi's folders
// belong at one path: both fail, naming each other and the path, and neither is
// written, whatever --parallel.
func TestRestore_PiLayoutSharedHeader(t *testing.T) {
	const ts = "2026-09-25T22-28-55-554Z"
	header := func(id string) string {
		return strings.Replace(headerLine(id), `"cwd":"/work"`, `"cwd":"/w/old"`, 1)
	}
	body := func(id string, n int) string {
		lines := []string{header(id)}
		parent := ""
		for i := range n {
			e := fmt.Sprintf("e%d", i)
			lines = append(lines, entryLine(e, parent))
			parent = e
		}
		return strings.Join(lines, "\n") + "\n"
	}
	for _, b := range []backend{fileBackend(), s3Backend()} {
		t.Run(b.name, func(t *testing.T) {
			store := b.fresh(t)
			put := func(agent, id string, n int) string {
				s := body(id, n)
				r := cliWith(t, cmdOpts{stdin: s}, "append", "--store", store, "--agent", agent, "--session", id)
				require.Equal(t, 0, r.code, r.stderr)
				return s
			}
			old := put("--w-old--", "moved", 2)
			archived := put("--archive--", "moved", 5)
			put("x", "shared", 2)
			put("y", "shared", 3)
			shared := filepath.Join("--w-old--", ts+"_shared.jsonl")
			failure := "belong at %s (one session header, stored 2 times); none of them is restored"

			for _, parallel := range []int{1, 4, 4, 4, 4, 4} {
				t.Run(strconv.Itoa(parallel), func(t *testing.T) {
					out := t.TempDir()
					for run, want := range []string{"restored 2, skipped 0, failed 2", "restored 0, skipped 2, failed 2"} {
						r := cli(t, "restore", "--layout", "pi", "--out", out, "--store", store, "--parallel", strconv.Itoa(parallel))
						require.Equal(t, 1, r.code, "run %d: %s", run, r.stdout)
						require.Contains(t, strings.ReplaceAll(r.stdout, " (identical)", ""), want, "run %d", run)
						for _, agent := range []string{"x", "y"} {
							require.Contains(t, r.stdout, "failed default/"+agent+"/shared: "+errPiPathShared.Error()+
								": default/x/shared and default/y/shared both "+fmt.Sprintf(failure, filepath.Join(out, shared)))
						}
						require.NotContains(t, r.stdout, errLocalOnly.Error())
						for rel, want := range map[string]string{
							filepath.Join("--w-old--", ts+"_moved.jsonl"):   old,
							filepath.Join("--archive--", ts+"_moved.jsonl"): archived,
						} {
							got, err := os.ReadFile(filepath.Join(out, rel))
							require.NoError(t, err, rel)
							require.Equal(t, want, string(got), rel)
						}
						require.NoFileExists(t, filepath.Join(out, shared))
					}
				})
			}
		})
	}
}
