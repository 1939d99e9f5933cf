package filebucket_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

const (
	condChildEnv = "FILEBUCKET_COND_CHILD" // the bucket directory, in a child
	condETagEnv  = "FILEBUCKET_COND_ETAG"  // the ETag every child expects
	condKey      = "s/HEAD.json"
)

// TestCondChild is the child of TestPutIf_AcrossProcesses: one PutIf with the
// expected ETag, printing WON or LOST.
func TestCondChild(t *testing.T) {
	dir := os.Getenv(condChildEnv)
	if dir == "" {
		t.Skip("run by TestPutIf_AcrossProcesses only")
	}
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	data := fmt.Appendf(nil, `{"pid":%d}`, os.Getpid())
	_, err = b.PutIf(context.Background(), condKey, bytes.NewReader(data), int64(len(data)),
		bucket.Cond{IfMatch: os.Getenv(condETagEnv)})
	switch {
	case err == nil:
		fmt.Println("WON")
	case errors.Is(err, bucket.ErrPreconditionFailed):
		fmt.Println("LOST")
	default:
		t.Fatal(err)
	}
}

// TestPutIf_AcrossProcesses races PutIf with one expected ETag from several
// processes on one directory (replicas sharing a volume): the lock is the kernel's
// (flock), not the process's, so exactly one wins in every round.
func TestPutIf_AcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	ctx := context.Background()
	etag, err := b.PutIf(ctx, condKey, strings.NewReader("{}"), 2, bucket.Cond{IfNoneMatch: true})
	require.NoError(t, err)
	const rounds, procs = 3, 6
	for round := range rounds {
		cmds := make([]*exec.Cmd, procs)
		outs := make([]*bytes.Buffer, procs)
		for i := range cmds {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			cmds[i] = exec.CommandContext(cctx, os.Args[0], "-test.run=^TestCondChild$", "-test.count=1")
			cmds[i].Env = append(os.Environ(), condChildEnv+"="+dir, condETagEnv+"="+etag)
			outs[i] = &bytes.Buffer{}
			cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
			require.NoError(t, cmds[i].Start())
		}
		won := 0
		for i, c := range cmds {
			require.NoError(t, c.Wait(), "child %d: %s", i, outs[i])
			if strings.Contains(outs[i].String(), "WON") {
				won++
			} else {
				require.Contains(t, outs[i].String(), "LOST", "child %d", i)
			}
		}
		require.Equal(t, 1, won, "round %d: exactly one process wins", round)
		_, etag, err = b.GetWithETag(ctx, condKey)
		require.NoError(t, err)
	}
}
