package transcript_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// pauseAfterOutput holds the first compacted segment stored through it, once it
// is stored, until release is closed: a run caught between storing its output
// and marking its inputs.
type pauseAfterOutput struct {
	bucket.Bucket
	once    sync.Once
	stored  chan struct{}
	release chan struct{}
}

func (p *pauseAfterOutput) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	err := p.Bucket.Put(ctx, key, r, size, opts)
	if err == nil && strings.Contains(key, "/L1/") && !strings.Contains(key, "/gc/") {
		p.once.Do(func() {
			close(p.stored)
			<-p.release
		})
	}
	return err
}

// TestCompact_TwoRunsDoNotLoseTheOutput is the race the crash test found: run A
// stores its output and, before it marks the inputs, run B lists the session,
// takes it for a run that stopped there, and resumes it. B used to delete the
// inputs at once (no delete delay), or a run C did once B's mark was older than a
// short delay, and A, finding them gone, took them for a deleted session's and
// deleted its output: every entry was lost. The inputs of an output a run did
// not write now wait until that output is a minute old, and the session stays
// whole through every run and after.
func TestCompact_TwoRunsDoNotLoseTheOutput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{
		{name: "no delay", delay: transcript.DeleteAtOnce},
		{name: "short delay", delay: time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mb := membucket.New()
			pb := &pauseAfterOutput{Bucket: mb, stored: make(chan struct{}), release: make(chan struct{})}
			s := newStore(t, pb, transcript.Config{})
			release := sync.OnceFunc(func() { close(pb.release) })
			defer release() // on a failure too, so that A ends before the store closes
			want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 8)
			opts := transcript.CompactOptions{DeleteDelay: tc.delay}

			type result struct {
				res transcript.CompactResult
				err error
			}
			doneA := make(chan result, 1)
			go func() {
				res, err := s.Compact(ctx, ref, opts)
				doneA <- result{res, err}
			}()
			select {
			case <-pb.stored:
			case <-time.After(30 * time.Second):
				t.Fatal("run A stored no output")
			}

			resB, err := s.Compact(ctx, ref, opts)
			require.NoError(t, err)
			require.Equal(t, 8, resB.Marked, "B resumes A's output")
			require.Zero(t, resB.Deleted, "A's output is too young for B to delete its inputs")
			require.Equal(t, 8, resB.Pending)
			if tc.delay > 0 {
				// B's mark is past the delay for a run C, but A's output is
				// still young.
				time.Sleep(10 * tc.delay)
				resC, err := s.Compact(ctx, ref, opts)
				require.NoError(t, err)
				require.Zero(t, resC.Deleted, "A's output is too young for C to delete its inputs")
				require.Equal(t, 8, resC.Pending)
			}

			release()
			a := <-doneA
			require.NoError(t, a.err)
			require.Empty(t, a.res.Skipped, "A keeps its output: its inputs are there")
			require.Len(t, a.res.Compactions, 1)
			if tc.delay < 0 {
				require.Equal(t, 8, a.res.Deleted, "A deletes the inputs of its own output at once")
			}
			got, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, want, ids(got))

			// The marks left are collected once the output settled.
			settleOutputs(mb)
			_, err = s.Compact(ctx, ref, opts)
			require.NoError(t, err)
			require.Equal(t, map[int]int{1: 1}, levels(t, s, ref))
			for _, k := range allKeys(t, mb) {
				require.NotContains(t, k, "/gc/", "no mark is left")
			}
			got, err = s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, want, ids(got))
		})
	}
}
