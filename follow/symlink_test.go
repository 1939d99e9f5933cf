package follow_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

// refIn is the session id of the default namespace under agent.
func refIn(agent, id string) transcript.TranscriptRef {
	return transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: agent, SessionID: id}
}

// TestFollower_SymlinkedFolders: a symbolic link to a directory directly under
// the root is a session folder named after the link, as Pi takes it; a link
// that would walk a directory twice (the root, an ancestor of it, a folder
// inside it, another link's directory) or that sits deeper down is ignored and
// reported once, saying why, and every file is uploaded once.
func TestFollower_SymlinkedFolders(t *testing.T) {
	lines := []string{header("s1"), entry("e1", "", "hi")}
	tests := []struct {
		name string
		// setup makes the links under root; away is a directory outside it
		// that holds the session s1 in "d".
		setup func(t *testing.T, root, away string)
		// want are the sessions uploaded (agent of s1); ignored the names
		// reported ignored with the text of why.
		want    []string
		ignored map[string]string
	}{
		{name: "linked folder", setup: func(t *testing.T, root, away string) {
			require.NoError(t, os.Symlink(filepath.Join(away, "d"), filepath.Join(root, "--w-linked--")))
		}, want: []string{"--w-linked--"}},
		{name: "relative link", setup: func(t *testing.T, root, away string) {
			rel, err := filepath.Rel(root, filepath.Join(away, "d"))
			require.NoError(t, err)
			require.NoError(t, os.Symlink(rel, filepath.Join(root, "--w-rel--")))
		}, want: []string{"--w-rel--"}},
		{name: "link to the root", setup: func(t *testing.T, root, away string) {
			require.NoError(t, os.Symlink(root, filepath.Join(root, "--loop--")))
		}, ignored: map[string]string{"--loop--": "which holds the sessions root"}},
		{name: "link to an ancestor", setup: func(t *testing.T, root, away string) {
			require.NoError(t, os.Symlink(filepath.Dir(root), filepath.Join(root, "--up--")))
		}, ignored: map[string]string{"--up--": "which holds the sessions root"}},
		{name: "link into the root", setup: func(t *testing.T, root, away string) {
			require.NoError(t, os.Symlink(filepath.Join(away, "d"), filepath.Join(root, "--w-linked--")))
			require.NoError(t, os.Symlink(filepath.Join(root, "--w-linked--"), filepath.Join(root, "--z-alias--")))
		}, want: []string{"--w-linked--"}, ignored: map[string]string{"--z-alias--": "which overlaps"}},
		{name: "two links to one directory", setup: func(t *testing.T, root, away string) {
			require.NoError(t, os.Symlink(filepath.Join(away, "d"), filepath.Join(root, "--b--")))
			require.NoError(t, os.Symlink(filepath.Join(away, "d"), filepath.Join(root, "--a--")))
		}, want: []string{"--a--"}, ignored: map[string]string{"--b--": "the folder of link --a--"}},
		{name: "link to a parent of another link's directory", setup: func(t *testing.T, root, away string) {
			require.NoError(t, os.Symlink(filepath.Join(away, "d"), filepath.Join(root, "--a--")))
			require.NoError(t, os.Symlink(away, filepath.Join(root, "--b--")))
		}, want: []string{"--a--"}, ignored: map[string]string{"--b--": "which overlaps"}},
		{name: "link inside a folder", setup: func(t *testing.T, root, away string) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, piFolder), 0o755))
			require.NoError(t, os.Symlink(filepath.Join(away, "d"), filepath.Join(root, piFolder, "sub")))
		}, ignored: map[string]string{piFolder + "/sub": "only the folders directly under the root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			away := filepath.Join(t.TempDir(), "away")
			require.NoError(t, os.MkdirAll(filepath.Join(away, "d"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(away, "d", "s1.jsonl"), []byte(joinLines(lines)), 0o644))
			fx.write("--home-u-real--/s2.jsonl", header("s2"), entry("f1", "", "real"))
			tt.setup(t, fx.root, away)
			f := fx.open()
			for range 2 { // one follower: the second pass reports nothing again
				require.NoError(t, f.Once(t.Context()))
			}
			requireOnce(t, fx.remote, refIn("--home-u-real--", "s2"), header("s2"), entry("f1", "", "real"))
			for _, agent := range tt.want {
				requireOnce(t, fx.remote, refIn(agent, "s1"), lines...)
			}
			var stored int
			for _, segs := range fx.remote.segments {
				stored += len(segs)
			}
			require.Equal(t, 1+len(tt.want), stored, "each file uploaded once, under one folder")
			ignored := map[string]string{}
			for _, ev := range fx.take(follow.EventIgnored) {
				_, dup := ignored[ev.File]
				require.False(t, dup, "%s reported once", ev.File)
				ignored[ev.File] = ev.Message
			}
			require.Len(t, ignored, len(tt.ignored), "%v", ignored)
			for name, why := range tt.ignored {
				require.Contains(t, ignored[name], why, name)
			}
		})
	}
}

// TestFollower_SymlinkedFolderWatched: a link to a session folder made while
// the follower runs is watched through the link: its file and the lines
// appended later are uploaded without waiting for a rescan.
func TestFollower_SymlinkedFolderWatched(t *testing.T) {
	fx := newFixture(t)
	fx.tune = func(c *follow.Config) { c.RescanInterval = time.Hour }
	require.NoError(t, os.MkdirAll(fx.root, 0o755))
	f := fx.open()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = f.Run(ctx)
	}()
	defer func() { cancel(); wg.Wait() }()

	away := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.MkdirAll(away, 0o755))
	lines := []string{header("s1"), entry("e1", "", "hi")}
	require.NoError(t, os.Symlink(away, filepath.Join(fx.root, "--w-linked--")))
	require.NoError(t, os.WriteFile(filepath.Join(away, "s1.jsonl"), []byte(joinLines(lines)), 0o644))
	ref := refIn("--w-linked--", "s1")
	require.Eventually(t, func() bool { return len(fx.remote.all(ref)) == 2 }, 10*time.Second, 10*time.Millisecond)
	fh, err := os.OpenFile(filepath.Join(away, "s1.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteString(entry("e2", "e1", "more") + "\n")
	require.NoError(t, err)
	require.NoError(t, fh.Close())
	require.Eventually(t, func() bool { return len(fx.remote.all(ref)) == 3 }, 10*time.Second, 10*time.Millisecond)
	requireOnce(t, fx.remote, ref, append(lines, entry("e2", "e1", "more"))...)
	require.Empty(t, fx.take(follow.EventIgnored))
}
