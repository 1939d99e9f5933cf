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

// TestStats_StrayObjects: stats counts the objects outside every session that
// verify names (files another tool dropped under the namespace's or an agent's
// key prefix), with their bytes, apart from the segments: an operator sizing
// the bucket sees them. It used to leave them out. --agent narrows them to the
// agent's, --session to none, as verify does.
func TestStats_StrayObjects(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	store := "file://" + dir
	r := cliWith(t, cmdOpts{stdin: headerLine("s") + "\n" + entryLine("e1", "") + "\n"}, "append", "--store", store, "--agent", "a", "--session", "s")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, ok(t, "stats", "--store", store), "stray")
	for k, data := range map[string]string{"default/notes.txt": "12345", "default/a/junk": "abc", "default/a/L0/lost.jsonl.zst": "zz"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, k)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, k), []byte(data), 0o644))
	}
	tests := []struct {
		args    []string
		objects int
		bytes   int64
	}{
		{nil, 3, 10},
		{[]string{"--agent", "a"}, 2, 5},
		{[]string{"--agent", "a", "--session", "s"}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got struct { // what --json prints of them
				Segments int `json:"segments"`
				Stray    struct {
					Objects int   `json:"objects"`
					Bytes   int64 `json:"bytes"`
				} `json:"stray"`
			}
			out := ok(t, append([]string{"stats", "--store", store, "--json"}, tt.args...)...)
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
			require.Equal(t, tt.objects, got.Stray.Objects, out)
			require.Equal(t, tt.bytes, got.Stray.Bytes, out)
			require.Equal(t, 1, got.Segments, "stray objects are no segments")
			require.Contains(t, out, `"stray"`, "--json always counts them")
			text := ok(t, append([]string{"stats", "--store", store}, tt.args...)...)
			if tt.objects == 0 {
				require.NotContains(t, text, "stray", text)
				return
			}
			require.Regexp(t, fmt.Sprintf(`(?m)^stray objects +%d \(%d bytes, in no session`, tt.objects, tt.bytes), text)
		})
	}
}
