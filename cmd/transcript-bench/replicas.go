package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// recorder is a bucket that remembers every object put through it, so that the
// baseline can upload exactly the same objects.
type recorder struct {
	bucket.Bucket
	mu   sync.Mutex
	objs []object
}

type object struct {
	key  string
	data []byte
}

// Put implements bucket.Bucket. It reads the body into a buffer of its size (the
// store always gives it), so that the recording costs the store's side of the
// item one allocation and one copy per object, not io.ReadAll's growing buffer.
func (r *recorder) Put(ctx context.Context, key string, rd io.Reader, size int64, opts bucket.PutOptions) error {
	var data []byte
	var err error
	if size >= 0 {
		data = make([]byte, size)
		_, err = io.ReadFull(rd, data)
	} else {
		data, err = io.ReadAll(rd)
	}
	if err != nil {
		return err
	}
	if err := r.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)), opts); err != nil {
		return err
	}
	r.mu.Lock()
	r.objs = append(r.objs, object{key, data})
	r.mu.Unlock()
	return nil
}

// flushAll has every replica flush its sessions' turns, from mirror.DefaultWorkers
// goroutines over disjoint sessions (a session's turns in order), and waits until
// every Mirror is quiescent.
func flushAll(ctx context.Context, reps []*replica, turns int) error {
	g, gctx := errgroup.WithContext(ctx)
	for i, r := range reps {
		g.Go(func() error {
			flushers, fctx := errgroup.WithContext(gctx)
			for f := range mirror.DefaultWorkers {
				flushers.Go(func() error {
					for t := range turns {
						for s := f; s < len(r.sessions); s += mirror.DefaultWorkers {
							ref := transcript.TranscriptRef{AgentID: "bench", SessionID: fmt.Sprintf("r%d-s%03d", i, s)}
							if err := r.m.Upload(fctx, sessiontree.Batch{Ref: ref, Entries: r.sessions[s][t], Links: r.links[s][t]}); err != nil {
								return err
							}
						}
					}
					return nil
				})
			}
			if err := flushers.Wait(); err != nil {
				return err
			}
			return r.m.AwaitQuiescence(gctx)
		})
	}
	return g.Wait()
}

// putRaw is item 5's baseline: objs PUT with minio-go PutObject, conc at a time,
// each under its own key's place in the session hierarchy (moved from the store's
// prefix to one of the baseline's, its name prefixed with round so that no round
// overwrites another's). Flattening the keys would spare the server the
// directories a first write under a new session's prefix creates.
func putRaw(ctx context.Context, e *env, objs []object, conc int, round string) error {
	client, name := e.s3().Client(), e.s3().Name()
	storePrefix, rawPrefix := e.key("replicas")+"/", e.key("raw", "replicas")+"/"
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for _, o := range objs {
		dir, base := path.Split(strings.TrimPrefix(o.key, storePrefix))
		key := rawPrefix + dir + round + "-" + base
		g.Go(func() error {
			_, err := client.PutObject(gctx, name, key, bytes.NewReader(o.data), int64(len(o.data)), minio.PutObjectOptions{})
			return err
		})
	}
	return g.Wait()
}

// medianOf returns the median of ds (which it sorts): the middle value, or the
// mean of the two middle values of an even count. (Taking the upper of the two
// let one round of four decide item 5's figure alone.)
func medianOf(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2]
	}
	return (ds[n/2-1] + ds[n/2]) / 2
}

// replica is one of item 5's replicas: its own bucket connection (recorded),
// Store, Mirror and sessions.
type replica struct {
	rec      *recorder
	store    *transcript.Store
	m        *mirror.Mirror
	sessions [][][][]byte
	// links[s][t] is what a SessionTree read of the entries of turn t of
	// session s when it appended them (pi.ParseEntry), which its flush hands
	// the mirror with the batch (sessiontree.Batch.Links): parsed once before
	// the item, as a tree parses each entry when it is appended, not when it
	// flushes.
	links [][][]pi.Links
}

// turnLinks parses each entry of each turn as a SessionTree's append does. The
// first turn, led by the session header (not an entry), gets none, as a tree's
// first batch.
func turnLinks(turns [][][]byte) ([][]pi.Links, error) {
	out := make([][]pi.Links, len(turns))
	for t, turn := range turns {
		if t == 0 {
			continue
		}
		for _, raw := range turn {
			e, err := pi.ParseEntry(raw)
			if err != nil {
				return nil, err
			}
			out[t] = append(out[t], e.Links())
		}
	}
	return out, nil
}

// take returns the objects recorded so far and forgets them.
func (r *recorder) take() []object {
	r.mu.Lock()
	defer r.mu.Unlock()
	objs := r.objs
	r.objs = nil
	return objs
}

// runReplicas is item 5: Replicas processes (each its own connection, Writer,
// outbox and Mirror with the default workers) flush ReplicaTurns turns of
// ReplicaSessions sessions each, all at once; the time runs until every Mirror is
// quiescent. Each replica flushes from mirror.DefaultWorkers goroutines over
// disjoint sessions (a session's turns in order), as a runtime serving that many
// sessions at once does, so the store runs replicas × workers flushes at once. The
// baseline PUTs the very same objects with minio-go PutObject at that same
// concurrency.
func runReplicas(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	sz := e.cfg.Sizes
	reps := make([]*replica, sz.Replicas)
	for i := range reps {
		b, err := e.openBucket(ctx)
		if err != nil {
			return res, err
		}
		if c, ok := b.(io.Closer); ok {
			defer c.Close()
		}
		r := &replica{rec: &recorder{Bucket: b}}
		if r.store, err = e.newStore(r.rec, "replicas"); err != nil {
			return res, err
		}
		defer r.store.Close()
		w, err := transcript.NewWriter(fmt.Sprintf("replica-%d", i))
		if err != nil {
			return res, err
		}
		if r.m, err = mirror.New(mirror.Config{Store: r.store, Writer: w, OutboxDir: filepath.Join(e.tmp, fmt.Sprintf("outbox-%d", i)), BlockWhenFull: true}); err != nil {
			return res, err
		}
		defer r.m.Close(context.WithoutCancel(ctx))
		for s := range sz.ReplicaSessions {
			turns := session(fmt.Sprintf("r%d-s%03d", i, s), uint64(i*10000+s), sz.ReplicaTurns)
			links, err := turnLinks(turns)
			if err != nil {
				return res, err
			}
			r.sessions, r.links = append(r.sessions, turns), append(r.links, links)
		}
		reps[i] = r
	}
	// Rounds of store and baseline, in alternating order (store first in the first
	// round, which records the objects): whatever the server still does from an
	// earlier item (deleting a compaction's inputs, say), or a drift as its disk
	// fills, falls on both alike. A round that runs the baseline first PUTs the
	// objects the previous round recorded.
	conc := sz.Replicas * mirror.DefaultWorkers
	var walls, rawWalls []time.Duration
	var objs []object
	var size int64
	store := func() (time.Duration, error) {
		wall, err := timeIt(func() error { return flushAll(ctx, reps, sz.ReplicaTurns) })
		if err != nil {
			return 0, err
		}
		objs, size = nil, 0
		for _, r := range reps {
			objs = append(objs, r.rec.take()...)
		}
		for _, o := range objs {
			size += int64(len(o.data))
		}
		if want := sz.Replicas * sz.ReplicaSessions * sz.ReplicaTurns; len(objs) != want {
			return 0, fmt.Errorf("replicas stored %d segments, want %d", len(objs), want)
		}
		return wall, nil
	}
	for round := range sz.ReplicaRounds {
		raw := func() (time.Duration, error) {
			return timeIt(func() error { return putRaw(ctx, e, objs, conc, fmt.Sprintf("round%d", round)) })
		}
		storeFirst := round%2 == 0
		var wall, rawWall time.Duration
		var err error
		if storeFirst {
			if wall, err = store(); err == nil {
				rawWall, err = raw()
			}
		} else if rawWall, err = raw(); err == nil {
			wall, err = store()
		}
		if err != nil {
			return res, err
		}
		e.logf("round %d (store first: %v): store %v, raw PUTs %v (%.3g×)", round+1, storeFirst, wall, rawWall, rawWall.Seconds()/wall.Seconds())
		walls, rawWalls = append(walls, wall), append(rawWalls, rawWall)
	}
	wall, rawWall := medianOf(walls), medianOf(rawWalls)
	n := float64(len(objs))
	note := fmt.Sprintf("%d replicas × %d sessions × %d flushes = %d segments, %.1f MB; concurrency %d (each replica flushes from %d goroutines, the baseline runs %d PUTs at once); median of %d rounds, store and baseline in alternating order",
		sz.Replicas, sz.ReplicaSessions, sz.ReplicaTurns, len(objs), float64(size)/mb, conc, mirror.DefaultWorkers, conc, sz.ReplicaRounds)
	res.Rows = append(res.Rows,
		row(5, fmt.Sprintf("aggregate flush throughput, %d replicas", sz.Replicas), "flushes/s", n/wall.Seconds(), "minio-go PutObject of the same objects", n/rawWall.Seconds(), true, note),
		row(5, fmt.Sprintf("aggregate upload throughput, %d replicas", sz.Replicas), "MB/s", float64(size)/mb/wall.Seconds(), "minio-go PutObject", float64(size)/mb/rawWall.Seconds(), true,
			"store: Upload (encode + outbox journal append, fsync shared by concurrent flushes) until every Mirror is quiescent"))
	return res, nil
}
