//go:build unix

package follow_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

// TestFollower_UnreadableFolder: a session folder the follower may not list
// (Pi run as another user under umask 077, say) holds sessions it cannot
// upload. Once reports the folder stuck, saying why, and fails, instead of
// leaving its sessions out without a word; the folder beside it is followed.
// Once the folder is readable, its sessions are uploaded and nothing is stuck.
func TestFollower_UnreadableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		rerunAsNobody(t) // root reads any folder
		return
	}
	for _, linked := range []bool{false, true} {
		t.Run(map[bool]string{false: "folder", true: "symlinked folder"}[linked], func(t *testing.T) {
			fx := newFixture(t)
			okLines := []string{header("s1"), entry("e1", "", "hi")}
			fx.write(fileA, okLines...)
			secretLines := []string{header("s2"), entry("f1", "", "secret")}
			secret := filepath.Join(fx.root, "--secret--")
			if linked {
				secret = filepath.Join(t.TempDir(), "elsewhere")
				require.NoError(t, os.Symlink(secret, filepath.Join(fx.root, "--secret--")))
			}
			require.NoError(t, os.MkdirAll(secret, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(secret, "2026-01-02T03-04-05-678Z_s2.jsonl"), []byte(joinLines(secretLines)), 0o644))
			require.NoError(t, os.Chmod(secret, 0))
			t.Cleanup(func() { _ = os.Chmod(secret, 0o755) })

			f := fx.open()
			err := f.Once(t.Context())
			require.ErrorIs(t, err, follow.ErrStuck)
			require.ErrorContains(t, err, "--secret--")
			st := f.Status()
			require.Len(t, st.Stuck, 1)
			require.Equal(t, "--secret--", st.Stuck[0].File)
			require.Contains(t, st.Stuck[0].Reason, "permission denied")
			stuck := fx.take(follow.EventStuck)
			require.Len(t, stuck, 1, "reported once")
			require.Equal(t, "--secret--", stuck[0].File)
			requireOnce(t, fx.remote, refOf("s1"), okLines...)

			require.NoError(t, os.Chmod(secret, 0o755))
			require.NoError(t, f.Once(t.Context()), "the same follower, once the folder is readable")
			require.Empty(t, f.Status().Stuck)
			requireOnce(t, fx.remote, transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "--secret--", SessionID: "s2"}, secretLines...)
		})
	}
}

// rerunAsNobody runs the test again in a copy of the test binary as the user
// nobody (uid and gid 65534), for a test that needs permissions to hold; it
// fails the test with the child's output if the child fails.
func rerunAsNobody(t *testing.T) {
	t.Helper()
	if os.Getenv("FOLLOW_TEST_AS_NOBODY") != "" {
		t.Fatal("the rerun as nobody still runs as root")
	}
	dir, err := os.MkdirTemp("", "follow-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o1777))
	exe, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(dir, "follow.test")
	src, err := os.Open(exe)
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())

	cmd := exec.CommandContext(t.Context(), bin, "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+dir, "HOME="+dir, "FOLLOW_TEST_AS_NOBODY=1", "GOCOVERDIR=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the test run as nobody:\n%s", out)
	t.Logf("run as nobody:\n%s", out)
}
