package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// Sizes are the workload sizes of a run.
type Sizes struct {
	// CodecSeconds is how long each codec measurement runs.
	CodecSeconds float64 `json:"codecSeconds"`
	// CodecTurns are the segment sizes (in turns) the codec is measured at.
	CodecTurns []int `json:"codecTurns"`
	// FlushTurns is the session length of the local flush measurement.
	FlushTurns int `json:"flushTurns"`
	// MirrorTurns is the session length of the mirror and request-cost measurements.
	MirrorTurns int `json:"mirrorTurns"`
	// OpenTurns is the session opened with each of OpenSegments segments, OpenReps
	// times each.
	OpenTurns    int   `json:"openTurns"`
	OpenSegments []int `json:"openSegments"`
	OpenReps     int   `json:"openReps"`
	// Replicas flush ReplicaTurns turns of ReplicaSessions sessions each.
	Replicas        int `json:"replicas"`
	ReplicaSessions int `json:"replicaSessions"`
	ReplicaTurns    int `json:"replicaTurns"`
	// ReplicaRounds is how many times the flush and its baseline alternate.
	ReplicaRounds int `json:"replicaRounds"`
	// Sessions of SessionSegments one-turn segments are restored and compacted.
	Sessions        int `json:"sessions"`
	SessionSegments int `json:"sessionSegments"`
	// Parallel is the parallelism of restore, compaction and their baselines.
	Parallel int `json:"parallel"`
	// SyncLengths are the session lengths (segments) of the per-turn sync cost,
	// measured over SyncReps turns each.
	SyncLengths []int `json:"syncLengths"`
	SyncReps    int   `json:"syncReps"`
	// WatchAppends appends to a session of WatchSegments segments are timed from
	// append to delivery by a Watch polling every WatchInterval.
	WatchSegments int           `json:"watchSegments"`
	WatchAppends  int           `json:"watchAppends"`
	WatchInterval time.Duration `json:"watchInterval"`
	// MemoryEntries are the session lengths (entries) whose restore, export,
	// context and verify by the CLI are measured for peak RSS.
	MemoryEntries []int `json:"memoryEntries"`
	// FollowSessions are the numbers of sessions written at once while the
	// follower's latency is measured, over FollowAppends appends per session,
	// with a batch interval of FollowBatch.
	FollowSessions []int         `json:"followSessions"`
	FollowAppends  int           `json:"followAppends"`
	FollowBatch    time.Duration `json:"followBatch"`
	// IdleSessions session files are followed for IdleSeconds while nothing
	// changes.
	IdleSessions int           `json:"idleSessions"`
	IdleSeconds  time.Duration `json:"idleSeconds"`
	// APIReadEntries are the session lengths read through the API and directly,
	// APIReadReps times each (also the repetitions of the list).
	APIReadEntries []int `json:"apiReadEntries"`
	APIReadReps    int   `json:"apiReadReps"`
	// ListSessions sessions of each of ListEntries entries are listed through the API.
	ListSessions int   `json:"listSessions"`
	ListEntries  []int `json:"listEntries"`
	// StreamAppends appends are timed to their delivery on event streams whose
	// servers watch every StreamInterval.
	StreamAppends  int           `json:"streamAppends"`
	StreamInterval time.Duration `json:"streamInterval"`
	// PayloadSessionMiB of images of PayloadImageKiB each make item 18's session,
	// forked PayloadForks times.
	PayloadSessionMiB int `json:"payloadSessionMiB"`
	PayloadImageKiB   int `json:"payloadImageKiB"`
	PayloadForks      int `json:"payloadForks"`
}

// newSizes returns the full sizes (BENCHMARKS.md), or the quick ones, scaled (for tests).
func newSizes(quick bool, scale float64) Sizes {
	s := Sizes{CodecSeconds: 1, CodecTurns: []int{1, 300}, FlushTurns: 500, MirrorTurns: 1000,
		OpenTurns: 1000, OpenSegments: []int{1, 10, 100, 1000}, OpenReps: 11,
		Replicas: 8, ReplicaSessions: 100, ReplicaTurns: 5, ReplicaRounds: 6,
		Sessions: 500, SessionSegments: 20, Parallel: 8,
		SyncLengths: []int{10, 100, 1000}, SyncReps: 130,
		WatchSegments: 100, WatchAppends: 20, WatchInterval: 100 * time.Millisecond,
		MemoryEntries:  []int{100_000, 1_000_000},
		FollowSessions: []int{1, 50}, FollowAppends: 40, FollowBatch: 100 * time.Millisecond,
		IdleSessions: 1000, IdleSeconds: time.Minute,
		APIReadEntries: []int{1000, 20_000, 100_000}, APIReadReps: 3,
		ListSessions: 1000, ListEntries: []int{10, 10_000},
		StreamAppends: 100, StreamInterval: 100 * time.Millisecond,
		PayloadSessionMiB: 1024, PayloadImageKiB: 2048, PayloadForks: 10}
	if quick {
		s.CodecSeconds, s.FlushTurns, s.MirrorTurns, s.OpenTurns, s.OpenReps = 0.25, 100, 100, 334, 3
		s.ReplicaSessions, s.ReplicaTurns, s.Sessions, s.ReplicaRounds = 25, 2, 50, 1
		s.SyncReps, s.WatchAppends = 65, 10
		s.MemoryEntries = []int{10_000, 100_000}
		s.FollowAppends, s.IdleSeconds = 10, 15*time.Second
		s.APIReadEntries, s.ListSessions, s.ListEntries, s.StreamAppends = []int{1000, 20_000}, 100, []int{10, 1000}, 20
		s.PayloadSessionMiB, s.PayloadImageKiB = 64, 1024
	}
	if scale < 1 {
		sc := func(n, least int) int { return max(least, int(math.Round(float64(n)*scale))) }
		s.CodecSeconds = max(0.02, s.CodecSeconds*scale)
		s.CodecTurns[1] = sc(s.CodecTurns[1], 2)
		s.FlushTurns, s.MirrorTurns, s.OpenTurns = sc(s.FlushTurns, 3), sc(s.MirrorTurns, 4), sc(s.OpenTurns, 4)
		s.Replicas, s.ReplicaSessions, s.Sessions, s.SessionSegments = sc(s.Replicas, 2), sc(s.ReplicaSessions, 2), sc(s.Sessions, 3), sc(s.SessionSegments, 5)
		s.OpenSegments = []int{1, 10}
		s.OpenReps, s.ReplicaRounds = 1, 1
		s.SyncLengths, s.SyncReps = []int{2, 10}, 2
		s.WatchSegments, s.WatchAppends, s.WatchInterval = 3, 2, 10*time.Millisecond
		s.MemoryEntries = []int{sc(1000, 10)}
		s.FollowSessions, s.FollowAppends, s.FollowBatch = []int{1, 2}, 2, 10*time.Millisecond
		s.IdleSessions, s.IdleSeconds = sc(s.IdleSessions, 3), 500*time.Millisecond
		s.APIReadEntries, s.APIReadReps, s.ListSessions, s.ListEntries = []int{sc(1000, 10)}, 1, sc(s.ListSessions, 3), []int{2, 20}
		s.StreamAppends, s.StreamInterval = 3, 10*time.Millisecond
		s.PayloadSessionMiB, s.PayloadImageKiB, s.PayloadForks = 4, 512, 2
	}
	return s
}

// String summarises the sizes for the report.
func (s Sizes) String() string {
	return fmt.Sprintf("codec %v turns/segment for %.2g s each; flush %d turns; mirror %d turns; "+
		"open %d turns in %v segments, %d reps; %d replicas × %d sessions × %d turns, %d rounds; "+
		"restore and compaction %d sessions × %d segments, parallelism %d; "+
		"per-turn sync at %v segments, %d turns each; Watch %d appends to %d segments, poll %v; "+
		"CLI memory at %v entries; follow latency at %v sessions, %d appends each, batch %v; follow idle on %d sessions for %v; "+
		"API read at %v entries, %d reps; API list of %d sessions at %v entries; stream %d appends, watch every %v; "+
		"payloads: %d MiB session of %d KiB images, %d forks",
		s.CodecTurns, s.CodecSeconds, s.FlushTurns, s.MirrorTurns, s.OpenTurns, s.OpenSegments, s.OpenReps,
		s.Replicas, s.ReplicaSessions, s.ReplicaTurns, s.ReplicaRounds, s.Sessions, s.SessionSegments, s.Parallel,
		s.SyncLengths, s.SyncReps, s.WatchAppends, s.WatchSegments, s.WatchInterval, s.MemoryEntries,
		s.FollowSessions, s.FollowAppends, s.FollowBatch, s.IdleSessions, s.IdleSeconds,
		s.APIReadEntries, s.APIReadReps, s.ListSessions, s.ListEntries, s.StreamAppends, s.StreamInterval,
		s.PayloadSessionMiB, s.PayloadImageKiB, s.PayloadForks)
}

// env is what a group's measurement works with.
type env struct {
	cfg childConfig
	// bucket is the --store bucket; root is the run's prefix within it (the store
	// URL's prefix joined with the run prefix). Everything the run writes lies under root.
	bucket bucket.Bucket
	root   string
	// tmp is a scratch directory removed when the group ends.
	tmp string
	log io.Writer
}

// key joins elements under the run's root.
func (e *env) key(elem ...string) string { return path.Join(append([]string{e.root}, elem...)...) }

// newStore returns a store over b under the run's prefix sub.
func (e *env) newStore(b bucket.Bucket, sub string) (*transcript.Store, error) {
	return transcript.New(transcript.Config{Bucket: b, Prefix: e.key(sub)})
}

// cpuMeter returns the meter of the CPU a measured call costs (see --server-pid).
func (e *env) cpuMeter() cpuMeter { return cpuMeter{serverPID: e.cfg.ServerPID} }

// s3 returns the minio-go view of the bucket, or nil for other backends.
func (e *env) s3() *s3bucket.Bucket {
	b, _ := e.bucket.(*s3bucket.Bucket)
	return b
}

// openBucket opens a new connection to the --store bucket (a replica of its own).
func (e *env) openBucket(ctx context.Context) (bucket.Bucket, error) {
	b, _, err := bucketurl.Open(ctx, e.cfg.Store)
	return b, err
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.log, "   "+format+"\n", args...)
}

// group is one child process's share of the items.
type group struct {
	name   string
	items  []int
	titles []string
	s3Only bool
	run    func(ctx context.Context, e *env) (ItemResult, error)
}

var groups = []group{
	{"codec", []int{1}, []string{"segment encode and decode vs raw zstd"}, false, runCodec},
	{"flush", []int{2}, []string{"Append + Flush to local files vs per-entry JSONL append with fsync"}, false, runFlush},
	{"mirror", []int{3, 8}, []string{"segment mirror vs legacy full-file mirror", "requests and cost per 1,000 turns"}, false, runMirror},
	{"open", []int{4}, []string{"open (union-merge) latency vs one GET"}, false, runOpen},
	{"replicas", []int{5}, []string{"flush throughput of concurrent replicas vs raw minio-go PUTs"}, true, runReplicas},
	{"restore", []int{6}, []string{"restore vs raw minio-go GETs and rclone copy"}, true, runRestore},
	{"compact", []int{7}, []string{"compaction throughput"}, false, runCompact},
	{"sync", []int{9, 10}, []string{"per-turn sync cost by session length", "Watch latency"}, false, runSync},
	{"serve", []int{11}, []string{"appends through transcript-serve vs the Go repository"}, true, runServe},
	{"memory", []int{12}, []string{"peak RSS of restore, export, context and verify vs the session's JSONL"}, false, runMemory},
	{"follow", []int{13, 14}, []string{"transcript follow: line appended → segment listable", "transcript follow: CPU while idle"}, false, runFollowItems},
	{"api", []int{15, 16, 17}, []string{"a session read through the API vs Store.ReadAll", "GET /v1/sessions vs LIST + GETs of small objects",
		"append → delivered on an event stream"}, false, runAPI},
	{"payloads", []int{18}, []string{"large payloads outside the segments vs inline"}, false, runPayloads},
}

func (g group) skippedRows(why string) []Row {
	rows := make([]Row, len(g.items))
	for i, it := range g.items {
		rows[i] = Row{Item: it, Name: g.titles[i], Skipped: why}
	}
	return rows
}

// runGroup runs the group named name in this (child) process.
func runGroup(ctx context.Context, name string, cfg childConfig) (ItemResult, error) {
	for _, g := range groups {
		if g.name != name {
			continue
		}
		b, prefix, err := bucketurl.Open(ctx, cfg.Store)
		if err != nil {
			return ItemResult{}, err
		}
		if c, ok := b.(io.Closer); ok {
			defer c.Close()
		}
		tmp, err := os.MkdirTemp("", "transcript-bench-"+name+"-")
		if err != nil {
			return ItemResult{}, err
		}
		defer os.RemoveAll(tmp)
		e := &env{cfg: cfg, bucket: b, root: path.Join(prefix, cfg.RunPrefix), tmp: tmp, log: os.Stderr}
		return g.run(ctx, e)
	}
	return ItemResult{}, fmt.Errorf("unknown group %q", name)
}

// cleanup deletes every object under the run prefix.
func cleanup(ctx context.Context, store, runPrefix string) error {
	b, prefix, err := bucketurl.Open(ctx, store)
	if err != nil {
		return err
	}
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	return deletePrefix(ctx, b, path.Join(prefix, runPrefix)+"/")
}

// deletePrefix deletes every object whose key starts with prefix, 16 at a time.
func deletePrefix(ctx context.Context, b bucket.Bucket, prefix string) error {
	keys, err := listKeys(ctx, b, prefix)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, k := range keys {
		g.Go(func() error { return b.Delete(gctx, k) })
	}
	return g.Wait()
}

// listKeys returns every key that starts with prefix, in one listing.
func listKeys(ctx context.Context, b bucket.Reader, prefix string) ([]string, error) {
	var keys []string
	err := b.List(ctx, bucket.ListOptions{Prefix: prefix}, func(o bucket.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	})
	return keys, err
}

// timeIt runs fn and returns how long it took.
func timeIt(fn func() error) (time.Duration, error) {
	t := time.Now()
	err := fn()
	return time.Since(t), err
}

// ratio returns a / b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// row builds a row with its ratio.
func row(item int, name, unit string, value float64, baseline string, baseValue float64, higherBetter bool, note string) Row {
	r := Row{Item: item, Name: name, Unit: unit, Value: value, HigherIsBetter: higherBetter, Note: note}
	if baseline != "" {
		r.Baseline, r.BaselineValue, r.Ratio = baseline, baseValue, ratio(value, baseValue)
	}
	return r
}

const mb = 1e6
