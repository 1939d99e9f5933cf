package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Pi file with a malformed line and a last line torn by a crash: import refuses
// it and names each line; --skip-malformed imports what Pi would load from it,
// says how many lines it left out, and a second run changes nothing.
func TestImport_SkipMalformed(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "store")
	header := `{"type":"session","version":3,"id":"0193e1d2-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}`
	e1 := `{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}`
	e2 := `{"type":"message","id":"e2","parentId":"e1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}}`
	torn := e2[:40]
	path := filepath.Join(dir, "crashed.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(header+"\n"+e1+"\n{oops\n"+e2+"\n"+torn), 0o644))
	sel := []string{"--store", store, "--agent", "a", "--session", "s"}

	r := cli(t, append(append([]string{"import"}, sel...), path)...)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "line 3")
	require.Contains(t, r.stderr, "torn last line")
	require.NotContains(t, r.stderr, "dropped", "a refused import drops nothing: it imports nothing")
	require.Contains(t, r.stderr, "2 malformed lines (--skip-malformed imports the rest)")
	r = cli(t, append([]string{"cat"}, sel...)...)
	require.NotEqual(t, 0, r.code, "a refused import stores nothing")

	r = cli(t, append(append([]string{"import", "--skip-malformed"}, sel...), path)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "default/a/s\t3 lines\t3 added as ")
	require.True(t, strings.HasSuffix(r.stdout, "\t2 skipped\n"), r.stdout)
	require.Contains(t, r.stderr, "line 3", "what is skipped is still named")
	require.Contains(t, r.stderr, "dropped a torn last line")
	require.Equal(t, header+"\n"+e1+"\n"+e2+"\n", ok(t, append([]string{"cat"}, sel...)...))

	r = cli(t, append(append([]string{"import", "--skip-malformed", "--json"}, sel...), path)...)
	require.Equal(t, 0, r.code, r.stderr)
	var sum importSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
	require.Equal(t, importSummary{Session: "default/a/s", Lines: 3, Added: 0, Existing: true, Skipped: 2}, sum)
}
