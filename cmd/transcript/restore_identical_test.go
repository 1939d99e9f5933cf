package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
)

// swapLastLines swaps the last two lines of the file at path: its size stays,
// its bytes (and the context Pi builds from it) change.
func swapLastLines(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last "\n"
	n := len(lines)
	require.GreaterOrEqual(t, n, 3)
	lines[n-1], lines[n-2] = lines[n-2], lines[n-1]
	require.NoError(t, os.WriteFile(path, bytes.Join(lines, nil), 0o644))
}

// TestRestoreSession_IdenticalMeansSameBytes: restore calls a session's files
// identical (and skips them) only when they hold the bytes the bucket gives;
// files changed without a change of size (and their modification times put
// back) are restored again, whole. Files as restore left them are still
// skipped without a fetch; files whose stamp is lost are read whole once.
func TestRestoreSession_IdenticalMeansSameBytes(t *testing.T) {
	ctx := context.Background()
	cb, s, w := countedStore(t)
	src, err := sessiontree.New(sessiontree.Config{Root: t.TempDir(), NoSync: true, Uploader: &mirror.Direct{Store: s, Writer: w}},
		sessiontree.Identity{}, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	for i := range 4 {
		_, err := src.AppendMessage(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"turn %d","timestamp":1}`, i)))
		require.NoError(t, err)
		require.NoError(t, src.Flush(ctx))
	}
	ref := src.Ref()

	tests := []struct {
		name     string
		change   func(t *testing.T, f sessiontree.Files)
		want     restoreOutcome
		wantGets int
	}{
		{"unchanged", func(*testing.T, sessiontree.Files) {}, outcomeSkipped, 0},
		{"last lines of both files swapped", func(t *testing.T, f sessiontree.Files) {
			swapLastLines(t, f.Log)
			swapLastLines(t, f.Context)
		}, outcomeRestored, 4},
		{"last lines of the context file swapped", func(t *testing.T, f sessiontree.Files) {
			swapLastLines(t, f.Context)
		}, outcomeRestored, 4},
		{"last lines of the log file swapped", func(t *testing.T, f sessiontree.Files) {
			swapLastLines(t, f.Log)
		}, outcomeRestored, 4},
		{"a byte of an entry changed", func(t *testing.T, f sessiontree.Files) {
			for _, p := range []string{f.Log, f.Context} {
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, bytes.Replace(data, []byte("turn 3"), []byte("turn 9"), 1), 0o644))
			}
		}, outcomeRestored, 4},
		{"last lines swapped, modification times put back", func(t *testing.T, f sessiontree.Files) {
			for _, p := range []string{f.Log, f.Context} {
				st, err := os.Stat(p)
				require.NoError(t, err)
				swapLastLines(t, p)
				require.NoError(t, os.Chtimes(p, st.ModTime(), st.ModTime()))
			}
		}, outcomeRestored, 4},
		{"stamp lost (touched)", func(t *testing.T, f sessiontree.Files) {
			when := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			require.NoError(t, os.Chtimes(f.Log, when, when))
		}, outcomeSkipped, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			dest := sessiontree.FilesOf(out, ref)
			outcome, _, _, err := restoreSession(ctx, s, ref, out, t.TempDir(), false)
			require.NoError(t, err)
			require.Equal(t, outcomeRestored, outcome)
			want := map[string][]byte{}
			for _, p := range []string{dest.Log, dest.Context} {
				want[p], err = os.ReadFile(p)
				require.NoError(t, err)
			}

			tt.change(t, dest)
			gets(cb)
			outcome, _, _, err = restoreSession(ctx, s, ref, out, t.TempDir(), false)
			require.NoError(t, err)
			require.Equal(t, tt.want, outcome)
			require.Equal(t, tt.wantGets, gets(cb))
			for p, data := range want {
				got, err := os.ReadFile(p)
				require.NoError(t, err)
				require.Equal(t, string(data), string(got), p)
			}

			// As restore left them: skipped, nothing fetched.
			outcome, _, _, err = restoreSession(ctx, s, ref, out, t.TempDir(), false)
			require.NoError(t, err)
			require.Equal(t, outcomeSkipped, outcome)
			require.Zero(t, gets(cb))
		})
	}
}
