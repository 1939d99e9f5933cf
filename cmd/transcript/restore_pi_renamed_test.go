package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRestore_PiLayoutLocalNamedOtherwise: a local file of the session under
// another name than restore computes (Pi created it with another timestamp
// prefix, or it was renamed), in the folder restore writes to, is the file
// restore brings up to date: it is skipped when identical, updated in place
// when it lacks entries, left (exit 1) when it holds entries the bucket lacks
// (replaced in place with --force); a second file of the session is never
// written, so Pi's /resume lists it once. Two local files of the session are
// reported, not picked from; a file of another session is left alone.
func TestRestore_PiLayoutLocalNamedOtherwise(t *testing.T) {
	const folder = "--home-daniel-co-pilish--"
	computed := "2026-09-25T22-28-55-488Z_" + fixtureV3ID + ".jsonl"
	other := "2026-09-25T22-40-00-000Z_" + fixtureV3ID + ".jsonl"
	full, err := os.ReadFile(fixtureV3)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(full), "\n")
	older := strings.Join(lines[:5], "")
	newer := string(full) + entryLine("local-only", "") + "\n"
	foreign := strings.Replace(lines[0], fixtureV3ID, "another-session", 1)

	tests := []struct {
		name  string
		local map[string]string // the files of the folder before the restore
		force bool
		code  int
		out   string            // in restore's output
		want  map[string]string // the files of the folder after it
	}{
		{
			name:  "identical, other name",
			local: map[string]string{other: string(full)},
			out:   "restored 0, skipped 1",
			want:  map[string]string{other: string(full)},
		},
		{
			name:  "older, other name",
			local: map[string]string{other: older},
			out:   "restored 1, skipped 0",
			want:  map[string]string{other: string(full)},
		},
		{
			name:  "renamed by hand, older",
			local: map[string]string{"my session.jsonl": older},
			out:   "restored 1, skipped 0",
			want:  map[string]string{"my session.jsonl": string(full)},
		},
		{
			name:  "newer, other name",
			local: map[string]string{other: newer},
			code:  1,
			out:   "local-only",
			want:  map[string]string{other: newer},
		},
		{
			name:  "newer, other name, --force",
			local: map[string]string{other: newer},
			force: true,
			out:   "restored 1, skipped 0",
			want:  map[string]string{other: string(full)},
		},
		{
			name:  "two local files of the session",
			local: map[string]string{other: older, computed: older},
			code:  1,
			out:   other,
			want:  map[string]string{other: older, computed: older},
		},
		{
			name:  "a file of another session",
			local: map[string]string{other: foreign},
			out:   "restored 1, skipped 0",
			want:  map[string]string{other: foreign, computed: string(full)},
		},
	}
	store := "file://" + t.TempDir()
	ok(t, "import", "--store", store, "--agent", "coder", "--session", "s1", fixtureV3)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sessions")
			dir := filepath.Join(out, folder)
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for name, data := range tt.local {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
			}
			args := []string{"restore", "--layout", "pi", "--out", out, "--store", store}
			if tt.force {
				args = append(args, "--force")
			}
			r := cli(t, args...)
			require.Equal(t, tt.code, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout+r.stderr, tt.out)
			got := map[string]string{}
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range entries {
				data, err := os.ReadFile(filepath.Join(dir, e.Name()))
				require.NoError(t, err)
				got[e.Name()] = string(data)
			}
			require.Equal(t, tt.want, got)
		})
	}
}
