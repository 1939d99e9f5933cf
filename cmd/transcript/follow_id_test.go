package main

import (
	"io/fs"
	"path/filepath"
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
			var markers []string
			require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(p)) == ".followers" {
					markers = append(markers, d.Name())
				}
				return err
			}))
			if id == "" {
				require.Len(t, markers, 2)
			} else {
				require.Equal(t, []string{id}, markers)
			}
		})
	}
}
