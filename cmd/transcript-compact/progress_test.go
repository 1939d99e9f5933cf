package main

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLogProgress: on a stderr that is no terminal (a CronJob's log), a long
// run says how far it got, a plain line every interval, and nothing once it
// finished; it used to say nothing until its summary, however long it ran.
func TestLogProgress(t *testing.T) {
	for _, tc := range []struct {
		total int
		want  string
	}{
		{10, "progress: compacting sessions: 3 of 10 done after "},
		{-1, "progress: compacting sessions: 3 done after "},
	} {
		var out lockedBuffer
		p := &logProgress{w: &out, desc: "compacting sessions", interval: time.Millisecond}
		p.Finish() // before Total: nothing to stop
		p.Total(tc.total)
		for range 3 {
			p.Done()
		}
		require.Eventually(t, func() bool { return bytes.Contains([]byte(out.String()), []byte(tc.want)) },
			10*time.Second, time.Millisecond, out.String())
		p.Finish()
		printed := out.String()
		require.Regexp(t, `^(progress: compacting sessions: \d+ (of \d+ )?done after [0-9.]+[a-zµ]+\n)+$`, printed)
		p.Finish()
		require.Equal(t, printed, out.String(), "nothing once finished")
	}
}
