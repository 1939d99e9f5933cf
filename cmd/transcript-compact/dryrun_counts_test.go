package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJob_DryRunCountsWhatTheRunMarksAndDeletes: a dry run's summary counts the
// segments the run would mark, delete and leave waiting for their delay as the
// run then does: the inputs of the compactions it plans, in default-mode and
// strict sessions alike. It used to count none of them ("0 marked, 0 deleted"),
// while the run with --delete-delay 0 deleted every one.
func TestJob_DryRunCountsWhatTheRunMarksAndDeletes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"delete at once", []string{"--delete-delay", "0"}},
		{"delete later", []string{"--delete-delay", "10m"}},
		{"full, delete at once", []string{"--delete-delay", "0", "--full"}},
		{"two levels", []string{"--delete-delay", "0", "--min-segments", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "file://" + t.TempDir()
			s := openStore(t, url)
			populate(t, s, 6, 2, 9)
			strictSession(t, s, "s-strict", 6)
			args := append([]string{"--store", url, "--json"}, tc.args...)
			dry := runBinary(t, context.Background(), append(args, "--dry-run")...)
			require.Equal(t, 0, dry.code, dry.stderr)
			real := runBinary(t, context.Background(), args...)
			require.Equal(t, 0, real.code, real.stderr)
			want, got := real.summary(t), dry.summary(t)
			require.NotZero(t, want.Marks)
			type counts struct{ Compacted, In, Out, Marks, Deletions, Pending int }
			require.Equal(t,
				counts{want.SessionsCompacted, want.SegmentsIn, want.SegmentsOut, want.Marks, want.Deletions, want.PendingDeletions},
				counts{got.SessionsCompacted, got.SegmentsIn, got.SegmentsOut, got.Marks, got.Deletions, got.PendingDeletions})
		})
	}
}

// TestJob_DryRunCountsResumedMarks: after a run that stopped between storing
// its outputs and marking their inputs (here: its marks removed), the next run
// marks those inputs and deletes them (or leaves them waiting for their delay,
// or for the outputs, which another run stored, to be a minute old).
// Its dry run counted them as marked but neither deleted nor waiting, so its
// counts fell short of the run's.
func TestJob_DryRunCountsResumedMarks(t *testing.T) {
	for _, delay := range []string{"0", "10m"} {
		t.Run(delay, func(t *testing.T) {
			ctx := context.Background()
			url := "file://" + t.TempDir()
			s := openStore(t, url)
			populate(t, s, 4, 4)
			r := runBinary(t, ctx, "--store", url, "--delete-delay", "10m")
			require.Equal(t, 0, r.code, r.stderr)
			for key := range snapshot(t, s.Bucket()) {
				if strings.Contains(key, "/gc/") {
					require.NoError(t, s.Bucket().Delete(ctx, key))
				}
			}
			args := []string{"--store", url, "--json", "--delete-delay", delay}
			dry := runBinary(t, ctx, append(args, "--dry-run")...)
			require.Equal(t, 0, dry.code, dry.stderr)
			real := runBinary(t, ctx, args...)
			require.Equal(t, 0, real.code, real.stderr)
			want, got := real.summary(t), dry.summary(t)
			require.Equal(t, 8, want.Marks)
			type counts struct{ Marks, Deletions, Pending int }
			require.Equal(t, counts{want.Marks, want.Deletions, want.PendingDeletions}, counts{got.Marks, got.Deletions, got.PendingDeletions})
		})
	}
}
