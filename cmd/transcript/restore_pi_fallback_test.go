package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRestore_PiLayoutFallback: restore --layout pi places every session
// whose header names no folder of Pi's (no cwd, "", a relative cwd, a number,
// a cwd whose folder name would be over 255 bytes: files Pi opens, or writes
// with --session-dir): into the folder of its agent when that is one of Pi's
// folders, else into the folder its agent names (as follow names a folder),
// in a file named as Pi names it, byte for byte, and Pi 1.6 opens it there. A
// header whose timestamp and id name no file fails, saying what to do.
func TestRestore_PiLayoutFallback(t *testing.T) {
	const ts = "2026-09-25T22:28:55.554Z"
	longCwd := "/monorepo/" + strings.Repeat("packages/very-long-package-name/", 9) + "src"
	require.Greater(t, len(longCwd), 255)
	tests := []struct {
		name string
		// cwd is the header's "cwd" as JSON, none when empty.
		cwd, agent, id string
		// folder is where the session goes; "" when it fails with err.
		folder, err string
	}{
		{name: "nocwd-pi", agent: "--nocwd--", folder: "--nocwd--"},
		{name: "nocwd", agent: "coder", folder: "coder"},
		{name: "empty-pi", cwd: `""`, agent: "--emptycwd--", folder: "--emptycwd--"},
		{name: "empty", cwd: `""`, agent: "coder", folder: "coder"},
		{name: "relative-pi", cwd: `"proj/sub"`, agent: "--relcwd--", folder: "--relcwd--"},
		{name: "relative", cwd: `"proj/sub"`, agent: "ci-box", folder: "ci-box"},
		{name: "number-pi", cwd: `42`, agent: "--numcwd--", folder: "--numcwd--"},
		{name: "number", cwd: `42`, agent: "coder", folder: "coder"},
		{name: "long-pi", cwd: jsString(longCwd), agent: "--deep--", folder: "--deep--"},
		{name: "long", cwd: jsString(longCwd), agent: "deep-project", folder: "deep-project"},
		{name: "long-escaped", cwd: jsString(longCwd), agent: "my%25project", folder: "my%project"},
		{name: "long-hidden", cwd: jsString(longCwd), agent: "%2Edeep", folder: "%2Edeep"}, // never a hidden folder
		{name: "badid", cwd: `"/work"`, agent: "coder", id: "a/b", err: "is not a file name (the header's timestamp and id name no file): restore it with --layout sessiontree"},
		{name: "badid-nocwd", agent: "--nocwd--", id: "a/b", err: "restore it with --layout sessiontree"},
	}
	for _, b := range []backend{fileBackend(), s3Backend()} {
		t.Run(b.name, func(t *testing.T) {
			store := b.fresh(t)
			want := map[string]string{}
			for _, tt := range tests {
				id := tt.id
				if id == "" {
					id = "id-" + tt.name
				}
				cwd := ""
				if tt.cwd != "" {
					cwd = `,"cwd":` + tt.cwd
				}
				body := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q%s}`, id, ts, cwd) + "\n" +
					fmt.Sprintf(`{"type":"message","id":"m1","parentId":null,"timestamp":%q,"message":{"role":"user","content":"hello %s","timestamp":1790461735554}}`, ts, tt.name) + "\n"
				r := cliWith(t, cmdOpts{stdin: body}, "append", "--store", store, "--agent", tt.agent, "--session", tt.name)
				require.Equal(t, 0, r.code, r.stderr)
				want[tt.name] = body
			}
			out := filepath.Join(t.TempDir(), "sessions")
			for run, summary := range []string{"restored 12, skipped 0", "restored 0, skipped 12"} {
				r := cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
				require.Equal(t, 1, r.code, r.stderr)
				require.Contains(t, r.stdout, summary, "run %d", run)
				require.Contains(t, r.stdout, "failed 2 of 14 sessions", "run %d", run)
			}
			r := cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
			var cases []piCase
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ref := "default/" + tt.agent + "/" + tt.name
					if tt.err != "" {
						require.Contains(t, r.stdout, "failed "+ref+": "+errNotPiPlaceable.Error())
						require.Contains(t, r.stdout, tt.err)
						require.Contains(t, r.stdout, "transcript export --agent "+tt.agent+" --session "+tt.name)
						return
					}
					require.NotContains(t, r.stdout, ref)
					file := filepath.Join(out, tt.folder, "2026-09-25T22-28-55-554Z_id-"+tt.name+".jsonl")
					got, err := os.ReadFile(file)
					require.NoError(t, err)
					require.Equal(t, want[tt.name], string(got))
					cases = append(cases, piCase{File: file, Out: file + ".pi.json", SessionDir: filepath.Join(t.TempDir(), "pi")})
				})
			}
			entries, err := os.ReadDir(out)
			require.NoError(t, err)
			for _, e := range entries {
				require.False(t, strings.HasPrefix(e.Name(), "."), "hidden %s left in the sessions root", e.Name())
			}
			if b.name != "file" {
				return // Pi reads the same files either way
			}
			node := needPiPackage(t, pi16Package)
			askPiWith(t, node, "pi16.mjs", t.TempDir(), "fallback.json", cases)
			for _, c := range cases {
				got, err := os.ReadFile(c.Out)
				require.NoError(t, err)
				require.False(t, strings.HasPrefix(string(got), "ERROR"), "Pi 1.6 cannot open %s: %s", c.File, got)
				var ctx struct {
					Messages []json.RawMessage `json:"messages"`
				}
				require.NoError(t, json.Unmarshal(got, &ctx), c.File)
				require.Len(t, ctx.Messages, 1, c.File)
				require.Contains(t, string(ctx.Messages[0]), `"hello `, c.File)
			}
		})
	}
}
