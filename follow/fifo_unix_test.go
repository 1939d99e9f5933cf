//go:build unix

package follow_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
)

// TestFollower_NamedPipe: a named pipe under the root is ignored and reported
// as what it is, without being opened (opening it would block the follower
// until a writer came).
func TestFollower_NamedPipe(t *testing.T) {
	fx := newFixture(t)
	fx.write(fileA, header("s1"), entry("e1", "", "hi"))
	fifo := filepath.Join(fx.root, piFolder, "pipe.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- fx.once() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		// Unblock the open so that the goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("the follower blocked opening a named pipe")
	}
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"))
	ign := fx.take(follow.EventIgnored)
	require.Len(t, ign, 1)
	require.Equal(t, piFolder+"/pipe.jsonl", ign[0].File)
	require.Contains(t, ign[0].Message, "a named pipe")
}
