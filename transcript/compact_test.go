package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/churntest"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// appendChain appends n one-entry segments to ref, each entry the child of the one
// before (ids prefix-0 .. prefix-(n-1), the first a child of parent).
func appendChain(t *testing.T, s *transcript.Store, r transcript.TranscriptRef, w *transcript.Writer, prefix, parent string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		_, err := s.AppendSegment(context.Background(), r, [][]byte{entry(id, parent)}, w)
		require.NoError(t, err)
		out = append(out, id)
		parent = id
	}
	return out
}

// allKeys lists every object key of the bucket.
func allKeys(t *testing.T, b bucket.Bucket) []string {
	t.Helper()
	var keys []string
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	return keys
}

// levels counts the segments of r per level.
func levels(t *testing.T, s *transcript.Store, r transcript.TranscriptRef) map[int]int {
	t.Helper()
	infos, err := s.ListSegments(context.Background(), r)
	require.NoError(t, err)
	out := map[int]int{}
	for _, in := range infos {
		out[in.Level]++
	}
	return out
}

func TestCompact_Backends(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, newBucket(t), transcript.Config{Prefix: "p"})
			w := newWriter(t, "replica-a")
			want := appendChain(t, s, ref, w, "e", "", 10)
			before, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)

			res, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 4, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.Len(t, res.Compactions, 1)
			require.Equal(t, 10, res.SegmentsIn())
			require.Equal(t, 10, res.Compactions[0].Entries)
			require.Equal(t, 10, res.Marked)
			require.Equal(t, 10, res.Deleted)
			require.Equal(t, map[int]int{1: 1}, levels(t, s, ref), "inputs and marks are gone")
			require.Len(t, allKeys(t, s.Bucket()), 1)

			after, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, want, ids(after))
			require.Equal(t, before.Raw(), after.Raw(), "compaction keeps every entry byte for byte, in order")

			again, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 4, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.Empty(t, again.Compactions, "nothing left to do")
			require.Zero(t, again.Marked+again.Deleted)
		})
	}
}

func TestCompact_Plans(t *testing.T) {
	cases := []struct {
		name        string
		segments    int
		min         int
		wantLevels  map[int]int
		compactions int
	}{
		{"below threshold", 3, 4, map[int]int{0: 3}, 0},
		{"at threshold", 4, 4, map[int]int{1: 1}, 1},
		{"min two", 2, 2, map[int]int{1: 1}, 1},
		{"default min", 5, 0, map[int]int{1: 1}, 1},
		{"one segment", 1, 2, map[int]int{0: 1}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, membucket.New(), transcript.Config{})
			appendChain(t, s, ref, newWriter(t, "w"), "e", "", tc.segments)
			res, err := s.Compact(context.Background(), ref, transcript.CompactOptions{MinSegments: tc.min})
			require.NoError(t, err)
			require.Len(t, res.Compactions, tc.compactions)
			if tc.compactions > 0 {
				require.Equal(t, tc.segments, res.Pending, "default delay keeps the inputs")
			}
			// Count only segments a reader reads.
			got, err := s.ReadAll(context.Background(), ref)
			require.NoError(t, err)
			require.Len(t, got.Entries, tc.segments)
			lv := map[int]int{}
			for _, in := range got.Segments {
				lv[in.Level]++
			}
			require.Equal(t, tc.wantLevels, lv)
		})
	}
}

func TestCompact_MultiLevel(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	w := newWriter(t, "w")
	parent := ""
	var want []string
	for round := range 3 {
		ids := appendChain(t, s, ref, w, fmt.Sprintf("r%d", round), parent, 2)
		want = append(want, ids...)
		parent = ids[len(ids)-1]
		_, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
		require.NoError(t, err)
	}
	// Rounds: 2 L0 -> L1; 2 L0 -> L1, 2 L1 -> L2; 2 L0 -> L1 (one L1 beside the L2).
	require.Equal(t, map[int]int{1: 1, 2: 1}, levels(t, s, ref))
	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want, ids(res))
}

func TestCompact_DeleteDelay(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	mem := membucket.New()
	mem.SetClock(clock) // mark ages are the bucket's
	counted := faultbucket.Wrap(mem)
	s := newStore(t, counted, transcript.Config{Now: func() time.Time { return time.Unix(0, 0) }})
	appendChain(t, s, ref, newWriter(t, "w"), "e", "", 20)

	res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: 10 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 20, res.Marked)
	require.Equal(t, 20, res.Pending)
	require.Zero(t, res.Deleted)
	require.Equal(t, map[int]int{0: 20, 1: 1}, levels(t, s, ref), "inputs stay through the delay")

	counted.ResetCounts()
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, got.Entries, 20)
	require.Len(t, got.Segments, 1)
	require.Equal(t, int64(21), counted.Counts().Get, "a reader reads the inputs while they exist: a claim to supersede hides nothing")

	mu.Lock()
	now = now.Add(9 * time.Minute)
	mu.Unlock()
	res, err = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: 10 * time.Minute})
	require.NoError(t, err)
	require.Zero(t, res.Deleted)
	require.Zero(t, res.Marked, "marks are not written twice")

	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	res, err = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: 10 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 20, res.Deleted)
	require.Len(t, allKeys(t, s.Bucket()), 1)
	counted.ResetCounts()
	got, err = s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, got.Entries, 20)
	require.Equal(t, int64(1), counted.Counts().Get, "once the inputs are gone, one GET")
}

// TestCompact_DryRunChangesNothing: a dry run writes and deletes nothing, and
// counts what the run would do: the planned compaction's inputs are marked, and
// deleted at once or left waiting for their delay.
func TestCompact_DryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name                    string
		delay                   time.Duration
		marked, deleted, waited int
	}{
		{"delete at once", transcript.DeleteAtOnce, 6, 6, 0},
		{"delete later", 10 * time.Minute, 6, 0, 6},
		{"default delay", 0, 6, 0, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, membucket.New(), transcript.Config{})
			appendChain(t, s, ref, newWriter(t, "w"), "e", "", 6)
			before := allKeys(t, s.Bucket())
			res, err := s.Compact(ctx, ref, transcript.CompactOptions{DryRun: true, DeleteDelay: tc.delay})
			require.NoError(t, err)
			require.Len(t, res.Compactions, 1)
			require.Equal(t, 6, res.SegmentsIn())
			require.Positive(t, res.BytesOut())
			require.Empty(t, res.Compactions[0].Output.Key)
			require.Equal(t, before, allKeys(t, s.Bucket()))
			require.Equal(t, [3]int{tc.marked, tc.deleted, tc.waited}, [3]int{res.Marked, res.Deleted, res.Pending})

			real, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: tc.delay})
			require.NoError(t, err)
			require.Equal(t, [3]int{res.Marked, res.Deleted, res.Pending}, [3]int{real.Marked, real.Deleted, real.Pending},
				"the dry run counts what the run does")
		})
	}
}

// racingBucket appends a segment of another writer the first time the compaction
// fetches a segment, as a replica flushing while the job runs would.
type racingBucket struct {
	bucket.Bucket
	once sync.Once
	race func()
}

func (b *racingBucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	b.once.Do(b.race)
	return b.Bucket.Get(ctx, key)
}

func TestCompact_ConcurrentSegmentIsKept(t *testing.T) {
	ctx := context.Background()
	rb := &racingBucket{Bucket: membucket.New()}
	s := newStore(t, rb, transcript.Config{})
	want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 5)
	var late transcript.SegmentInfo
	rb.race = func() {
		var err error
		late, err = s.AppendSegment(ctx, ref, [][]byte{entry("late", "e-4")}, newWriter(t, "other"))
		require.NoError(t, err)
	}
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Len(t, res.Compactions, 1)
	for _, in := range res.Compactions[0].Inputs {
		require.NotEqual(t, late.Key, in.Key)
	}
	require.Equal(t, 5, res.Deleted)
	require.Equal(t, map[int]int{0: 1, 1: 1}, levels(t, s, ref), "the concurrent segment is neither input nor deleted")
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, append(want, "late"), ids(got))
}

// failingMarks refuses to store deletion marks while failing is set: a job that dies
// after writing its output and before marking the inputs.
type failingMarks struct {
	bucket.Bucket
	failing atomic.Bool
}

var errInjected = errors.New("injected failure")

func (b *failingMarks) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if b.failing.Load() && strings.Contains(key, "/gc/") {
		return errInjected
	}
	return b.Bucket.Put(ctx, key, r, size, opts)
}

func TestCompact_ResumesAfterCrashBeforeMarks(t *testing.T) {
	ctx := context.Background()
	fb := &failingMarks{Bucket: membucket.New()}
	s := newStore(t, fb, transcript.Config{})
	want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 8)
	fb.failing.Store(true)
	_, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: time.Hour})
	require.ErrorIs(t, err, errInjected)
	require.Equal(t, map[int]int{0: 8, 1: 1}, levels(t, s, ref), "output written, inputs unmarked")

	fb.failing.Store(false)
	// The output is another run's, just stored: its inputs are marked and wait
	// for it to settle, however short the delete delay.
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Empty(t, res.Compactions, "the output already there is reused, not written again")
	require.Equal(t, 8, res.Marked)
	require.Equal(t, 8, res.Pending)
	require.Zero(t, res.Deleted)
	require.Equal(t, map[int]int{0: 8, 1: 1}, levels(t, s, ref))

	settleOutputs(fb.Bucket.(*membucket.Bucket))
	res, err = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Empty(t, res.Compactions)
	require.Equal(t, 8, res.Deleted)
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want, ids(got))
}

// TestCompact_DeleteAtOnceStoresNoMark: without a delete delay the inputs are
// deleted in the run that supersedes them, so no mark object is written (or
// deleted): marks would be refused here, and the run still succeeds.
func TestCompact_DeleteAtOnceStoresNoMark(t *testing.T) {
	ctx := context.Background()
	fb := &failingMarks{Bucket: membucket.New()}
	s := newStore(t, fb, transcript.Config{})
	want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 8)
	fb.failing.Store(true)
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Equal(t, 8, res.Marked, "scheduled")
	require.Equal(t, 8, res.Deleted)
	for _, k := range allKeys(t, fb) {
		require.NotContains(t, k, "/gc/")
	}
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want, ids(got))
}

// chainSession returns a memory bucket and store holding a chain of n one-entry
// segments of ref, and their listing.
func chainSession(t *testing.T, n int) (bucket.Bucket, *transcript.Store, []transcript.SegmentInfo) {
	t.Helper()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{})
	appendChain(t, s, ref, newWriter(t, "w"), "e", "", n)
	infos, err := s.ListSegments(context.Background(), ref)
	require.NoError(t, err)
	return b, s, infos
}

func TestCompact_CorruptInputLeftInPlace(t *testing.T) {
	ctx := context.Background()
	b, s, infos := chainSession(t, 4)
	// Replace the third segment's bytes with a damaged copy.
	victim := infos[2].Key
	rc, _, err := b.Get(ctx, victim)
	require.NoError(t, err)
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	rc.Close()
	data[len(data)-3] ^= 0xff
	require.NoError(t, b.Delete(ctx, victim))
	require.NoError(t, b.Put(ctx, victim, strings.NewReader(string(data)), int64(len(data)), bucket.PutOptions{}))
	before := allKeys(t, b)

	_, err = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.ErrorIs(t, err, transcript.ErrCompactInput)
	require.ErrorIs(t, err, segment.ErrCorrupt)
	require.Contains(t, err.Error(), victim)
	require.Equal(t, before, allKeys(t, b), "nothing written, marked or deleted")
}

func TestCompact_KeepsConflictingVersions(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{})
	w := newWriter(t, "w")
	first := entry("x", "")
	second := []byte(strings.Replace(string(first), "hi x", "hello x", 1))
	for _, raw := range [][]byte{first, entry("a", "x"), second, entry("b", "x")} {
		_, err := s.AppendSegment(ctx, ref, [][]byte{raw}, w)
		require.NoError(t, err)
	}
	before, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, before.Conflicts, 1)

	res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Equal(t, 4, res.Compactions[0].Entries, "both versions of x are kept")
	seg, err := s.ReadSegment(ctx, res.Compactions[0].Output.Key)
	require.NoError(t, err)
	require.Contains(t, seg.Entries, second)

	after, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, before.Raw(), after.Raw())
	require.Len(t, after.Conflicts, 1, "the conflict is still reported")
}

func TestCompact_LyingOutputIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	b, s, infos := chainSession(t, 2)
	// A level-1 segment that names both inputs but holds only the first's entry.
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	defer enc.Close()
	data, meta, err := enc.Encode(segment.Meta{WriterID: "liar", Seq: 1, Level: 1,
		Inputs: []string{infos[0].Key, infos[1].Key}}, [][]byte{entry("e-0", "")})
	require.NoError(t, err)
	key := strings.Replace(infos[0].Key, "/L0/", "/L1/", 1)
	key = key[:strings.LastIndex(key, "-")+1] + fmt.Sprintf("%016x", meta.Checksum) + transcript.SegmentExt
	require.NoError(t, b.Put(ctx, key, strings.NewReader(string(data)), int64(len(data)), bucket.PutOptions{}))

	_, err = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.ErrorIs(t, err, transcript.ErrCompactInput)
	require.Contains(t, err.Error(), "lacks its entry")
	for _, in := range infos {
		_, err := b.Stat(ctx, in.Key)
		require.NoError(t, err, "no input is deleted on a lying segment's word")
	}
}

func TestCompact_TwoJobsAtOnce(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, newBucket(t), transcript.Config{})
			want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 12)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
				}()
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			// A third run settles whatever the two left (an extra output's inputs).
			_, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			got, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, want, ids(got), "every entry once")
			require.Empty(t, got.Conflicts)
		})
	}
}

// TestCompact_WhileWritingAndReading runs compaction in a loop while writers append to
// the session and readers open it: no reader fails or misses an acknowledged entry,
// every result is closed under parents, and at the end every entry is there once.
func TestCompact_WhileWritingAndReading(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			s := newStore(t, newBucket(t), transcript.Config{})
			res, err := churntest.Run(ctx, churntest.Config{
				Store: s, Refs: []transcript.TranscriptRef{ref}, Writers: 3, PerWriter: 15, Entry: entry,
				Job: func(ctx context.Context) error {
					_, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 3, DeleteDelay: 500 * time.Millisecond})
					return err
				},
			})
			require.NoError(t, err)
			require.Positive(t, res.Reads)
			require.Positive(t, res.Jobs)

			time.Sleep(600 * time.Millisecond)
			_, err = s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: 500 * time.Millisecond})
			require.NoError(t, err)
			got, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Len(t, got.Entries, len(res.Acked[ref]), "every entry, exactly once")
			require.Empty(t, got.Missing(res.Acked[ref]))
			require.Empty(t, got.Conflicts)
			require.LessOrEqual(t, len(got.Segments), 3, "a compacted session reads few segments")
		})
	}
}

// TestCompact_CopyUnderAnotherPrefix copies a compacted bucket, whose inputs wait out
// their delete delay, under another prefix (as rclone into a directory does): the
// copy still knows which segments are superseded and which are marked.
func TestCompact_CopyUnderAnotherPrefix(t *testing.T) {
	ctx := context.Background()
	src := membucket.New()
	s := newStore(t, src, transcript.Config{Prefix: "ops/transcripts"})
	want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 6)
	_, err := s.Compact(ctx, ref, transcript.CompactOptions{})
	require.NoError(t, err)

	dst := faultbucket.Wrap(membucket.New())
	for _, k := range allKeys(t, src) {
		rc, oi, err := src.Get(ctx, k)
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		rc.Close()
		require.NoError(t, err)
		nk := "backup/" + strings.TrimPrefix(k, "ops/transcripts/")
		require.NoError(t, dst.Put(ctx, nk, strings.NewReader(string(data)), oi.Size, bucket.PutOptions{}))
	}
	c := newStore(t, dst, transcript.Config{Prefix: "backup"})
	dst.ResetCounts()
	got, err := c.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want, ids(got))
	require.Len(t, got.Segments, 1)
	require.Equal(t, int64(7), dst.Counts().Get, "inputs that exist are read in the copy too")

	res, err := c.Compact(ctx, ref, transcript.CompactOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Compactions, "the copy's inputs are not compacted again")
	require.Zero(t, res.Marked, "the copied marks are recognised")
	require.Equal(t, 6, res.Pending)
}

// alwaysVanishing answers every Get with not found: each listing it gives is stale
// by the time the segments are fetched, as under a busy concurrent compaction.
type alwaysVanishing struct{ bucket.Bucket }

func (alwaysVanishing) Get(_ context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
}

func TestCompact_ContendedLeavesTheSession(t *testing.T) {
	ctx := context.Background()
	mem := membucket.New()
	s := newStore(t, mem, transcript.Config{})
	appendChain(t, s, ref, newWriter(t, "w"), "e", "", 5)
	before := allKeys(t, mem)
	c := newStore(t, alwaysVanishing{mem}, transcript.Config{MaxRelists: 2})
	res, err := c.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err, "another job's work is not this job's failure")
	require.True(t, res.Contended)
	require.Empty(t, res.Compactions)
	require.Equal(t, before, allKeys(t, mem))
}

// TestCompact_OlderThanUsesTheBucketClock: --older-than measures a segment's age on
// the bucket's clock from the ModTime it lists, so neither the time in the key (a
// writer's clock) nor the store's own clock can make a fresh session look old.
func TestCompact_OlderThanUsesTheBucketClock(t *testing.T) {
	ctx := context.Background()
	bucketNow := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	mem := membucket.New()
	mem.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return bucketNow })
	// The writers' and the job's clock is a day ahead: key times say "old" by it.
	s := newStore(t, mem, transcript.Config{Now: func() time.Time { return bucketNow.Add(-24 * time.Hour) }})
	appendChain(t, s, ref, newWriter(t, "w"), "e", "", 5)
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{OlderThan: time.Hour})
	require.NoError(t, err)
	require.True(t, res.SkippedRecent, "stored just now by the bucket's clock")
	require.Empty(t, res.Compactions)
	mu.Lock()
	bucketNow = bucketNow.Add(time.Hour)
	mu.Unlock()
	res, err = s.Compact(ctx, ref, transcript.CompactOptions{OlderThan: time.Hour})
	require.NoError(t, err)
	require.False(t, res.SkippedRecent)
	require.Len(t, res.Compactions, 1)
}

// TestCompact_ResumeKeepsConflictingVersions: an output holding both versions of a
// conflicting id, left unmarked by a crash, is recognised as holding each input.
func TestCompact_ResumeKeepsConflictingVersions(t *testing.T) {
	ctx := context.Background()
	fb := &failingMarks{Bucket: membucket.New()}
	s := newStore(t, fb, transcript.Config{})
	w := newWriter(t, "w")
	first := entry("x", "")
	second := []byte(strings.Replace(string(first), "hi x", "hello x", 1))
	for _, raw := range [][]byte{first, entry("a", "x"), second, entry("b", "x")} {
		_, err := s.AppendSegment(ctx, ref, [][]byte{raw}, w)
		require.NoError(t, err)
	}
	fb.failing.Store(true)
	_, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: time.Hour})
	require.ErrorIs(t, err, errInjected)
	fb.failing.Store(false)
	settleOutputs(fb.Bucket.(*membucket.Bucket))
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Equal(t, 4, res.Marked)
	require.Equal(t, 4, res.Deleted)
}
