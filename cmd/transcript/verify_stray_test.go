package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVerify_StrayObjectsOutsideSessions: verify names the objects another
// tool dropped directly under the namespace's or an agent's key prefix, where
// no reader looks, as it names those inside a session; --agent narrows it to
// that agent's, and --session to the session's own.
func TestVerify_StrayObjectsOutsideSessions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	store := "file://" + dir
	r := cliWith(t, cmdOpts{stdin: headerLine("s") + "\n" + entryLine("e1", "") + "\n"}, "append", "--store", store, "--agent", "a", "--session", "s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, ok(t, "verify", "--store", store), "0 problems")
	for _, k := range []string{"default/notes.txt", "default/a/junk"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, k), []byte("x"), 0o644))
	}

	tests := []struct {
		args []string
		want []string
	}{
		{nil, []string{"default: default/notes.txt: not part of the store's key layout", "default/a: default/a/junk: not part of"}},
		{[]string{"--agent", "a"}, []string{"default/a: default/a/junk: not part of"}},
		{[]string{"--agent", "a", "--session", "s"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := cli(t, append([]string{"verify", "--store", store}, tt.args...)...)
			if tt.want == nil {
				require.Equal(t, 0, r.code, r.stdout)
				return
			}
			require.Equal(t, 1, r.code, r.stdout+r.stderr)
			for _, w := range tt.want {
				require.Contains(t, r.stdout, w)
			}
			require.Equal(t, len(tt.want), strings.Count(r.stdout, "not part of the store's key layout"), r.stdout)
		})
	}
}
