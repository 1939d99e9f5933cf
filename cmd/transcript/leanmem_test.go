package main

import (
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// leanMemBudget bounds what reading the 100k-entry session of linearSession
// (13.1 MiB of JSONL) may cost, as multiples of its JSONL size, as written
// (level-0 segments) and after one compaction. The figures they were set from
// (go1.26, linux/amd64) are in the comments: each budget leaves some 15% above
// them.
type leanMemBudget struct {
	live  float64            // live heap once ReadLean returned
	alloc map[string]float64 // bytes allocated by each whole command
}

// The allocation budgets hold the cut of each decoded frame into entries in one
// slice sized from the metadata's count (segment's frameCheck.expect): grown by
// appends, every command below allocated about half the JSONL more.
var leanMemBudgets = map[string]leanMemBudget{
	"level 0": {
		live: 1.95, // measured 1.69
		alloc: map[string]float64{
			"restore": 5.7, // measured 4.98
			"export":  5.5, // measured 4.78
			"context": 8.9, // measured 7.70
			"verify":  2.8, // measured 2.42
		},
	},
	// A compacted segment's metadata (entry index, origins) is read packed
	// (transcript.Store.PackedReads): a lean read keeps only the ids of it,
	// verify none (BENCHMARKS.md, "Item 12 on compacted sessions"; read
	// unpacked, 1.78 live, and 6.36, 6.16, 9.08, 4.10 allocated).
	"compacted": {
		live: 1.70, // measured 1.60
		alloc: map[string]float64{
			"restore": 6.3, // measured 5.49
			"export":  6.1, // measured 5.29
			"context": 9.4, // measured 8.21
			"verify":  3.6, // measured 3.17
		},
	},
}

// TestLeanRead_MemoryBudget fails when a whole-session read of the CLI needs
// more memory than it did: the heap a lean read of a 100k-entry session holds
// (what a restore, export or context keeps while it writes), and the bytes each
// of restore, export, context and verify allocates (the garbage that sets how
// far the heap grows past what is live), of the session as written and
// compacted. Both are counted, not timed, so the test does not depend on the
// machine's load; the peak RSS they lead to is item 12 of cmd/transcript-bench.
// With the race detector, which allocates for itself (restore 6.2× instead of
// 5.35×), only the live heap is checked.
func TestLeanRead_MemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 100k-entry session")
	}
	store, jsonl := linearSession(t, 100_000)
	ctx := context.Background()
	ref := transcript.TranscriptRef{AgentID: "memory", SessionID: "s"}

	bk, prefix, err := bucketurl.Open(ctx, store)
	require.NoError(t, err)
	s, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(t, err)
	defer s.Close()
	for _, layout := range []string{"level 0", "compacted"} {
		if layout == "compacted" {
			c, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.NotEmpty(t, c.Compactions, "the session is compacted")
		}
		budget := leanMemBudgets[layout]
		t.Run(layout, func(t *testing.T) {
			base := liveHeap()
			res, err := s.ReadLean(ctx, ref)
			require.NoError(t, err)
			live := liveHeap() - base
			require.Equal(t, 100_001, res.Len())
			runtime.KeepAlive(res)
			res = nil
			t.Logf("live after ReadLean: %.2f× the JSONL", float64(live)/float64(jsonl))
			require.LessOrEqual(t, float64(live), budget.live*float64(jsonl), "live heap after ReadLean")
			if raceEnabled {
				return
			}

			for _, c := range leanReadCommands(t.TempDir()) {
				args := append(c.args, "--store", store, "--agent", "memory", "--session", "s")
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				require.NoError(t, run(ctx, args, nil, io.Discard, io.Discard), c.name)
				runtime.ReadMemStats(&after)
				alloc := float64(after.TotalAlloc - before.TotalAlloc)
				t.Logf("%s allocated %.2f× the JSONL", c.name, alloc/float64(jsonl))
				require.LessOrEqual(t, alloc, budget.alloc[c.name]*float64(jsonl), "bytes %s allocated", c.name)
			}
		})
	}
}

// liveHeap returns the bytes of live heap objects after two collections (the
// second empties what sync.Pools kept through the first).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
