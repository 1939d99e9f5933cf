package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

func TestPiSessionPath(t *testing.T) {
	header := func(cwd, id string) pi.Header {
		h, err := pi.ParseHeader([]byte(`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-09-25T22:28:55.488Z","cwd":` + cwd + `}`))
		require.NoError(t, err)
		return h
	}
	const name = "2026-09-25T22-28-55-488Z_s1.jsonl"
	tests := []struct {
		cwd, id, want, err string
	}{
		{cwd: `"/home/u/proj"`, id: "s1", want: "--home-u-proj--/" + name},
		{cwd: `"/home/u/proj/"`, id: "s1", want: "--home-u-proj--/" + name},
		{cwd: `"/home//u/./x/../proj"`, id: "s1", want: "--home-u-proj--/" + name},
		{cwd: `"/srv/agent:one"`, id: "s1", want: "--srv-agent-one--/" + name},
		{cwd: `"/"`, id: "s1", want: "----/" + name},
		{cwd: `"C:\\Users\\u\\proj"`, id: "s1", want: "--C--Users-u-proj--/" + name},
		{cwd: `"proj"`, id: "s1", err: "not an absolute path"},
		{cwd: `""`, id: "s1", err: "not an absolute path"},
		{cwd: `"/home/u"`, id: `a/b`, err: "not a file name"},
		{cwd: `"/home/u"`, id: strings.Repeat("x", 300), err: "not a file name"},
	}
	for _, tt := range tests {
		t.Run(tt.cwd+" "+tt.id[:min(len(tt.id), 8)], func(t *testing.T) {
			got, err := piSessionPath(header(tt.cwd, tt.id))
			if tt.err != "" {
				require.ErrorIs(t, err, errNotPiPlaceable)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestRestore_PiLayout: restore --layout pi writes each session where Pi keeps
// it, byte for byte, dated by its newest entry; a second run skips it; a local
// file holding entries the bucket lacks is replaced only with --force; a
// session whose header names no folder of Pi's goes into its agent's.
func TestRestore_PiLayout(t *testing.T) {
	for _, b := range []backend{fileBackend(), s3Backend()} {
		t.Run(b.name, func(t *testing.T) {
			store, out := b.fresh(t), filepath.Join(t.TempDir(), "sessions")
			ok(t, "import", "--store", store, "--agent", "coder", "--session", "s1", fixtureV3)
			dest := filepath.Join(out, "--home-daniel-co-pilish--", "2026-09-25T22-28-55-488Z_"+fixtureV3ID+".jsonl")

			r := cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "restored 1, skipped 0")
			want, err := os.ReadFile(fixtureV3)
			require.NoError(t, err)
			got, err := os.ReadFile(dest)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))
			st, err := os.Stat(dest)
			require.NoError(t, err)
			require.Equal(t, time.Date(2026, 9, 25, 22, 30, 6, 0, time.UTC), st.ModTime().UTC(), "dated by its newest entry")
			require.Equal(t, os.FileMode(0o644), st.Mode().Perm())

			r = cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "restored 0, skipped 1")

			f, err := os.OpenFile(dest, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(entryLine("local-only", "") + "\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			r = cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
			require.Equal(t, 1, r.code)
			require.Contains(t, r.stdout, "local-only")
			r = cli(t, "restore", "--layout", "pi", "--force", "--out", out, "--store", store)
			require.Equal(t, 0, r.code, r.stderr)
			got, err = os.ReadFile(dest)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))

			rel := headerLine("rel")
			rel = strings.Replace(rel, `"cwd":"/work"`, `"cwd":"work"`, 1)
			cliWith(t, cmdOpts{stdin: rel + "\n" + entryLine("e1", "") + "\n"}, "append", "--store", store, "--agent", "coder", "--session", "rel")
			r = cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
			require.Equal(t, 0, r.code, r.stdout)
			require.Contains(t, r.stdout, "restored 1, skipped 1")
			require.FileExists(t, filepath.Join(out, "coder", "2026-09-25T22-28-55-554Z_rel.jsonl"), "a relative cwd names no folder: the agent's")
		})
	}
}

func TestRestore_LayoutUsage(t *testing.T) {
	r := cli(t, "restore", "--layout", "tree", "--out", t.TempDir(), "--store", "file://"+t.TempDir())
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `--layout "tree": want sessiontree or pi`)
}
