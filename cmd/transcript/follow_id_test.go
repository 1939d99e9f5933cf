package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFollow_FollowerIDForEphemeralState: --once runs each with a state
// directory of its own (a cron job in a fresh container) leave a marker
// each; with --follower-id they share one.
func TestFollow_FollowerIDForEphemeralState(t *testing.T) {
	for _, id := range []string{"", "f-cron.host1"} {
		t.Run("id "+id, func(t *testing.T) {
			root, _ := piRoot(t)
			dir := t.TempDir()
			for range 2 {
				args := []string{"follow", "--once", "--store", "file://" + dir, "--state-dir", t.TempDir()}
				if id != "" {
					args = append(args, "--follower-id", id)
				}
				r := cli(t, append(args, root)...)
				require.Equal(t, 0, r.code, r.stderr)
			}
			markers := followerMarkers(t, dir)
			if id == "" {
				require.Len(t, markers, 2)
			} else {
				require.Equal(t, []string{id}, markers)
			}
		})
	}
}

// TestFollow_CopiedStateDir: a --state-dir copied (here to another path on
// the same machine) makes the copy's follower take a new id: its --json
// event says so ("copied", in the shape docs/cli-json.schema.json gives),
// and the store holds a marker for each; the original keeps its id.
func TestFollow_CopiedStateDir(t *testing.T) {
	root, _ := piRoot(t)
	store, state := "file://"+t.TempDir(), t.TempDir()
	run := func(state string) string {
		t.Helper()
		r := cli(t, "follow", "--once", "--json", "--store", store, "--state-dir", state, root)
		require.Equal(t, 0, r.code, r.stderr)
		return r.stdout
	}
	require.NotContains(t, run(state), `"event":"copied"`)
	copied := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.CopyFS(copied, os.DirFS(state)))
	var found bool
	for line := range strings.Lines(run(copied)) {
		if strings.Contains(line, `"event":"copied"`) {
			found = true
			requireSchema(t, "transcript.follow", line)
		}
	}
	require.True(t, found, "a copied event")
	require.NotContains(t, run(copied), `"event":"copied"`, "the copy keeps its new id")
	require.NotContains(t, run(state), `"event":"copied"`, "the original keeps its id")
	require.Len(t, followerMarkers(t, strings.TrimPrefix(store, "file://")), 2)
}

// followerMarkers returns the ids of the followers' markers in the file
// store at dir.
func followerMarkers(t *testing.T, dir string) []string {
	t.Helper()
	var ids []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(p)) == ".followers" {
			ids = append(ids, d.Name())
		}
		return err
	}))
	return ids
}
