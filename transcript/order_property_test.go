package transcript_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// shuffledBucket lists its keys in a random order, as no real backend does: the
// merge must not depend on the listing order.
type shuffledBucket struct {
	bucket.Bucket
	rng *rand.Rand
}

func (b shuffledBucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	var all []bucket.ObjectInfo
	if err := b.Bucket.List(ctx, opts, func(oi bucket.ObjectInfo) error { all = append(all, oi); return nil }); err != nil {
		return err
	}
	b.rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	for _, oi := range all {
		if err := fn(oi); err != nil {
			return err
		}
	}
	return nil
}

// storedSegment is one level-0 segment of a generated history, as stored.
type storedSegment struct {
	key  string
	data []byte
}

// replica is one writer of a generated history: its own store (with a clock
// skewed against the others), its writer, and what it last read.
type replica struct {
	store *transcript.Store
	w     *transcript.Writer
	known []string // entry ids it knows
	raw   map[string][]byte
	leaf  string // the active leaf as it last saw it
}

// genHistory lets several replicas with clocks skewed by up to an hour append
// to one session: runs of entries on their active leaf, branches from older
// entries, new roots, leaf entries (to a known entry, an unknown one, null),
// labels, and conflicting versions of known ids; each replica sometimes reads
// the session first and sometimes writes on a stale view. It returns the
// level-0 segments in the order they were stored.
func genHistory(t *testing.T, rng *rand.Rand) []storedSegment {
	ctx := context.Background()
	b := membucket.New()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reps := make([]*replica, 2+rng.IntN(3))
	for i := range reps {
		skew := time.Duration(rng.Int64N(int64(2*time.Hour))) - time.Hour
		wall := func() time.Time { return now.Add(skew) }
		s, err := transcript.New(transcript.Config{Bucket: b, Clock: transcript.NewClock(wall), Now: wall})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		w, err := transcript.NewWriter(fmt.Sprintf("replica-%d", i))
		require.NoError(t, err)
		reps[i] = &replica{store: s, w: w, raw: map[string][]byte{}}
	}
	var out []storedSegment
	n := 0
	newID := func() string { n++; return fmt.Sprintf("%04x%04x", n, rng.Uint32N(1<<16)) }
	ts := func() string { return now.Format("2006-01-02T15:04:05.000Z") }
	for range 8 + rng.IntN(25) {
		now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Second))))
		r := reps[rng.IntN(len(reps))]
		if rng.IntN(3) > 0 {
			res, err := r.store.ReadAll(ctx, ref)
			if err == nil {
				r.known, r.raw = r.known[:0], map[string][]byte{}
				entries := make([]pi.Entry, 0, len(res.Entries))
				for _, e := range res.Entries {
					r.known = append(r.known, e.ID)
					r.raw[e.ID] = e.Raw
					pe, err := pi.ParseEntry(e.Raw)
					require.NoError(t, err)
					entries = append(entries, pe)
				}
				r.leaf = pi.ActiveLeafID(entries)
			}
		}
		var batch [][]byte
		for range 1 + rng.IntN(3) {
			parent := r.leaf
			switch x := rng.IntN(10); {
			case x == 0 || len(r.known) == 0:
				parent = ""
			case x < 3:
				parent = r.known[rng.IntN(len(r.known))]
			}
			var raw []byte
			id := newID()
			switch x := rng.IntN(20); {
			case x == 0 && len(r.known) > 0: // another version of a known id
				id = r.known[rng.IntN(len(r.known))]
				old, _ := pi.ParseEntry(r.raw[id])
				p, _ := old.ParentID()
				raw = []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":"user","content":"version %d"}}`,
					id, jsonOrNull(p), ts(), rng.IntN(1000)))
			case x < 3: // a leaf entry: to a known entry, an unknown one, or null
				target := "null"
				switch {
				case x == 1 && len(r.known) > 0:
					target = fmt.Sprintf("%q", r.known[rng.IntN(len(r.known))])
				case x == 2:
					target = `"ffffffff"`
				}
				raw = []byte(fmt.Sprintf(`{"type":"leaf","id":%q,"parentId":%s,"timestamp":%q,"targetId":%s}`, id, jsonOrNull(parent), ts(), target))
			case x == 3 && len(r.known) > 0:
				raw = []byte(fmt.Sprintf(`{"type":"label","id":%q,"parentId":%s,"timestamp":%q,"targetId":%q,"label":"l%d"}`,
					id, jsonOrNull(parent), ts(), r.known[rng.IntN(len(r.known))], rng.IntN(3)))
			default:
				role := []string{"user", "assistant"}[rng.IntN(2)]
				raw = []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":%q,"content":"m%s","provider":"p","model":"m%d"}}`,
					id, jsonOrNull(parent), ts(), role, id, rng.IntN(3)))
			}
			e, err := pi.ParseEntry(raw)
			require.NoError(t, err, string(raw))
			batch = append(batch, raw)
			if _, dup := r.raw[id]; !dup {
				r.known = append(r.known, id)
			}
			r.raw[id] = raw
			if move, target := pi.LeafMoveOf(e, func(id string) bool { _, ok := r.raw[id]; return ok }); move != pi.MoveNone {
				r.leaf = target
			}
		}
		seen := r.store.Clock().Last(ref)
		obj, err := r.store.PrepareSegment(ref, batch, r.w)
		require.NoError(t, err)
		require.True(t, obj.Info.Time.After(seen), "a writer writes after every key it has seen")
		require.NoError(t, r.store.PutSegment(ctx, obj.Info.Key, obj.Data))
		out = append(out, storedSegment{obj.Info.Key, obj.Data})
	}
	return out
}

func jsonOrNull(id string) string {
	if id == "" {
		return "null"
	}
	return fmt.Sprintf("%q", id)
}

// answer is everything a reader learns from a session that must not depend on
// how its segments are laid out.
type answer struct {
	Order     []string // raw entries in merge order
	Losers    []string
	Conflicts []string
	Leaf      string
	Contexts  []string // BuildContextAt every entry id, and at the active leaf
}

func answerOf(t *testing.T, res *transcript.MergeResult) answer {
	var a answer
	entries := make([]pi.Entry, 0, len(res.Entries))
	for _, e := range res.Entries {
		a.Order = append(a.Order, string(e.Raw))
		pe, err := pi.ParseEntry(e.Raw)
		require.NoError(t, err)
		entries = append(entries, pe)
	}
	for _, e := range res.Losers {
		a.Losers = append(a.Losers, string(e.Raw))
	}
	for _, c := range res.Conflicts {
		a.Conflicts = append(a.Conflicts, fmt.Sprintf("%s kept %v dropped %v", c.ID, c.KeptOrigin, c.DroppedOrigin))
	}
	a.Leaf = pi.ActiveLeafID(entries)
	a.Contexts = append(a.Contexts, string(pi.BuildContextFrom(entries, nil).JSON()))
	for _, e := range entries {
		a.Contexts = append(a.Contexts, string(pi.BuildContextAt(entries, e.ID()).JSON()))
	}
	return a
}

// compactSchedule decides, after segment i of n is stored, whether to compact
// and how.
type compactSchedule func(i, n int, rng *rand.Rand) (bool, transcript.CompactOptions)

// compactSchedules returns the schedules the property test compares.
func compactSchedules() map[string]compactSchedule {
	return map[string]compactSchedule{
		"none": func(int, int, *rand.Rand) (bool, transcript.CompactOptions) {
			return false, transcript.CompactOptions{}
		},
		"after each segment": func(int, int, *rand.Rand) (bool, transcript.CompactOptions) {
			return true, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce}
		},
		"random points": func(_, _ int, rng *rand.Rand) (bool, transcript.CompactOptions) {
			delay := transcript.DeleteAtOnce
			if rng.IntN(2) == 0 {
				delay = time.Hour // inputs stay, superseded
			}
			return rng.IntN(3) == 0, transcript.CompactOptions{MinSegments: 2 + rng.IntN(3), DeleteDelay: delay}
		},
		"twice": func(i, n int, _ *rand.Rand) (bool, transcript.CompactOptions) {
			return i == n/2 || i == n-1, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce}
		},
	}
}

// TestMergeOrder_Property: for random histories of several replicas with skewed
// clocks, branches, conflicts and leaf entries, the merged order, the active
// leaf, every context and every conflict winner are the same whatever was
// compacted when, in whatever order the bucket lists, for every reader.
func TestMergeOrder_Property(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			segs := genHistory(t, rng)
			var want *answer
			names := []string{"none", "after each segment", "random points", "twice"}
			for _, name := range names {
				b := membucket.New()
				compactor, err := transcript.New(transcript.Config{Bucket: b,
					Clock: transcript.NewClock(func() time.Time { return time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC) })})
				require.NoError(t, err)
				w, err := transcript.NewWriter("compactor")
				require.NoError(t, err)
				compacted := 0
				for i, sg := range segs {
					require.NoError(t, compactor.PutSegment(ctx, sg.key, sg.data))
					if ok, opts := compactSchedules()[name](i, len(segs), rng); ok {
						opts.Writer = w
						res, err := compactor.Compact(ctx, ref, opts)
						require.NoError(t, err)
						compacted += res.SegmentsOut()
					}
				}
				if name != "none" && len(segs) > 3 {
					require.Positive(t, compacted, "schedule %q compacted nothing", name)
				}
				for reader := range 3 {
					s, err := transcript.New(transcript.Config{Bucket: shuffledBucket{b, rand.New(rand.NewPCG(seed, uint64(reader)))},
						Clock: transcript.NewClock(func() time.Time { return time.Date(2026, 3, 1, 13, reader, 0, 0, time.UTC) })})
					require.NoError(t, err)
					res, err := s.ReadAll(ctx, ref)
					require.NoError(t, err)
					require.Zero(t, res.Cycles)
					got := answerOf(t, res)
					if want == nil {
						want = &got
						continue
					}
					require.Equal(t, want.Order, got.Order, "schedule %q reader %d: merge order", name, reader)
					require.Equal(t, want.Losers, got.Losers, "schedule %q reader %d: conflict losers", name, reader)
					require.Equal(t, want.Conflicts, got.Conflicts, "schedule %q reader %d: conflicts", name, reader)
					require.Equal(t, want.Leaf, got.Leaf, "schedule %q reader %d: active leaf", name, reader)
					require.Equal(t, want.Contexts, got.Contexts, "schedule %q reader %d: contexts", name, reader)
					_ = s.Close()
				}
				_ = compactor.Close()
			}
		})
	}
}

// TestMergeOrder_CompactionKeepsNewestBranch is the plain case: a root, branch A,
// then branch B, each its own segment; compacting after A must not make A the
// active leaf, and of two versions of one id the first written wins either way.
func TestMergeOrder_CompactionKeepsNewestBranch(t *testing.T) {
	ctx := context.Background()
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprint("compact=", compact), func(t *testing.T) {
			s := newStore(t, membucket.New(), transcript.Config{})
			w, err := transcript.NewWriter("w")
			require.NoError(t, err)
			put := func(raws ...string) {
				var batch [][]byte
				for _, r := range raws {
					batch = append(batch, []byte(r))
				}
				_, err := s.AppendSegment(ctx, ref, batch, w)
				require.NoError(t, err)
			}
			put(`{"type":"message","id":"root","parentId":null,"message":{"role":"user","content":"r"}}`,
				`{"type":"message","id":"dup","parentId":"root","message":{"role":"user","content":"version one"}}`)
			put(`{"type":"message","id":"A","parentId":"root","message":{"role":"user","content":"a"}}`)
			if compact {
				_, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
				require.NoError(t, err)
			}
			put(`{"type":"message","id":"dup","parentId":"root","message":{"role":"user","content":"version two"}}`,
				`{"type":"message","id":"B","parentId":"root","message":{"role":"user","content":"b"}}`)
			res, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			ids := make([]string, len(res.Entries))
			for i, e := range res.Entries {
				ids[i] = e.ID
			}
			require.Equal(t, []string{"root", "dup", "A", "B"}, ids)
			require.Contains(t, string(res.Entries[1].Raw), "version one")
			require.Len(t, res.Losers, 1)
			require.Contains(t, string(res.Losers[0].Raw), "version two")
		})
	}
}

// TestMergeOrder_SlowClockAfterRead: a replica whose clock is an hour behind,
// having read the session, still writes after what it read, so its new branch
// is the active leaf.
func TestMergeOrder_SlowClockAfterRead(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fastWall := func() time.Time { return now }
	slowWall := func() time.Time { return now.Add(-time.Hour) }
	fast, err := transcript.New(transcript.Config{Bucket: b, Clock: transcript.NewClock(fastWall), Now: fastWall})
	require.NoError(t, err)
	slow, err := transcript.New(transcript.Config{Bucket: b, Clock: transcript.NewClock(slowWall), Now: slowWall})
	require.NoError(t, err)
	wf, _ := transcript.NewWriter("fast")
	ws, _ := transcript.NewWriter("slow")
	_, err = fast.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"root","parentId":null}`), []byte(`{"type":"message","id":"old","parentId":"root"}`)}, wf)
	require.NoError(t, err)
	_, err = slow.ReadAll(ctx, ref)
	require.NoError(t, err)
	info, err := slow.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"new","parentId":"root"}`)}, ws)
	require.NoError(t, err)
	require.True(t, info.Time.After(now.Add(-time.Second)), "key time %v", info.Time)
	res, err := fast.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, "new", res.Entries[len(res.Entries)-1].ID)
	require.True(t, slices.IsSortedFunc(res.Segments, func(a, b transcript.SegmentInfo) int { return strings.Compare(a.Key, b.Key) }))
}
