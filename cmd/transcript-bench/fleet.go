package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/mirror/mirrortest"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
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

// Put implements bucket.Bucket.
func (r *recorder) Put(ctx context.Context, key string, rd io.Reader, size int64, opts bucket.PutOptions) error {
	data, err := io.ReadAll(rd)
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

// runReplicas is item 5: Replicas processes (each its own connection, Writer,
// outbox and Mirror with the default workers) flush ReplicaTurns turns of
// ReplicaSessions sessions each, all at once; the time runs until every Mirror is
// quiescent. The baseline PUTs the very same objects with minio-go PutObject at the
// same concurrency (replicas × workers).
func runReplicas(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	sz := e.cfg.Sizes
	type replica struct {
		rec      *recorder
		store    *transcript.Store
		m        *mirror.Mirror
		sessions [][][][]byte
	}
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
			r.sessions = append(r.sessions, session(fmt.Sprintf("r%d-s%03d", i, s), uint64(i*10000+s), sz.ReplicaTurns))
		}
		reps[i] = r
	}
	wall, err := timeIt(func() error {
		g, gctx := errgroup.WithContext(ctx)
		for i, r := range reps {
			g.Go(func() error {
				for t := range sz.ReplicaTurns {
					for s, batches := range r.sessions {
						ref := transcript.TranscriptRef{AgentID: "bench", SessionID: fmt.Sprintf("r%d-s%03d", i, s)}
						if err := r.m.Upload(gctx, mirror.Batch{Ref: ref, Entries: batches[t]}); err != nil {
							return err
						}
					}
				}
				return r.m.AwaitQuiescence(gctx)
			})
		}
		return g.Wait()
	})
	if err != nil {
		return res, err
	}
	var objs []object
	var size int64
	for _, r := range reps {
		objs = append(objs, r.rec.objs...)
	}
	for _, o := range objs {
		size += int64(len(o.data))
	}
	if want := sz.Replicas * sz.ReplicaSessions * sz.ReplicaTurns; len(objs) != want {
		return res, fmt.Errorf("replicas stored %d segments, want %d", len(objs), want)
	}
	conc := sz.Replicas * mirror.DefaultWorkers
	client, name := e.s3().Client(), e.s3().Name()
	rawPrefix := e.key("raw", "replicas") + "/"
	rawWall, err := timeIt(func() error {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(conc)
		for _, o := range objs {
			g.Go(func() error {
				_, err := client.PutObject(gctx, name, rawPrefix+path.Base(o.key), bytes.NewReader(o.data), int64(len(o.data)), minio.PutObjectOptions{})
				return err
			})
		}
		return g.Wait()
	})
	if err != nil {
		return res, err
	}
	n := float64(len(objs))
	note := fmt.Sprintf("%d replicas × %d sessions × %d flushes = %d segments, %.1f MB; concurrency %d", sz.Replicas, sz.ReplicaSessions,
		sz.ReplicaTurns, len(objs), float64(size)/mb, conc)
	res.Rows = append(res.Rows,
		row(5, fmt.Sprintf("aggregate flush throughput, %d replicas", sz.Replicas), "flushes/s", n/wall.Seconds(), "minio-go PutObject of the same objects", n/rawWall.Seconds(), true, note),
		row(5, fmt.Sprintf("aggregate upload throughput, %d replicas", sz.Replicas), "MB/s", float64(size)/mb/wall.Seconds(), "minio-go PutObject", float64(size)/mb/rawWall.Seconds(), true,
			"store: Upload (encode + outbox write with fsync) until every Mirror is quiescent"))
	return res, nil
}

// fleetAgent holds the sessions restored and compacted by items 6 and 7.
const fleetAgent = "fleet"

// openFleet returns the store of the fleet sessions over b, writing them first if
// needed (see ensureFleet) and noting the setup in res. The caller closes the store.
func openFleet(ctx context.Context, e *env, b bucket.Bucket, res *ItemResult) (*transcript.Store, error) {
	store, err := e.newStore(b, "fleet")
	if err != nil {
		return nil, err
	}
	note, err := ensureFleet(ctx, e, store)
	if err != nil {
		store.Close()
		return nil, err
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	return store, nil
}

// ensureFleet writes Sessions sessions of SessionSegments one-turn segments under the
// store, unless an earlier child of this run did (its marker exists), and returns a
// note on what the setup cost.
func ensureFleet(ctx context.Context, e *env, store *transcript.Store) (string, error) {
	sz := e.cfg.Sizes
	marker := e.key("fleet-ready")
	if _, err := e.bucket.Stat(ctx, marker); err == nil {
		return "", nil
	} else if !errors.Is(err, bucket.ErrNotFound) {
		return "", err
	}
	var objects, stored atomic.Int64
	d, err := timeIt(func() error {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i := range sz.Sessions {
			g.Go(func() error {
				sid := fmt.Sprintf("s%05d", i)
				ref := transcript.TranscriptRef{AgentID: fleetAgent, SessionID: sid}
				w, err := transcript.NewWriter("seed-" + sid)
				if err != nil {
					return err
				}
				for _, b := range session(sid, uint64(100000+i), sz.SessionSegments) {
					o, err := store.PrepareSegment(ref, b, w)
					if err != nil {
						return err
					}
					if err := store.PutSegment(gctx, o.Info.Key, o.Data); err != nil {
						return err
					}
					objects.Add(1)
					stored.Add(int64(len(o.Data)))
				}
				return nil
			})
		}
		return g.Wait()
	})
	if err != nil {
		return "", fmt.Errorf("writing the sessions: %w", err)
	}
	if err := e.bucket.Put(ctx, marker, strings.NewReader("ready"), 5, bucket.PutOptions{}); err != nil {
		return "", err
	}
	note := fmt.Sprintf("setup wrote %d sessions, %d segments, %.1f MB in %.1f s (16 parallel PutSegment)",
		sz.Sessions, objects.Load(), float64(stored.Load())/mb, d.Seconds())
	e.logf("%s", note)
	return note, nil
}

// runRestore is item 6: restore every session of the fleet from the bucket alone
// into local SessionTree files (one recursive listing, then sessiontree.Restore +
// Flush per session from it, as `transcript restore` does), Parallel sessions at a
// time, against copying the same objects with minio-go
// (one listing, then GetObject into files, Parallel at a time) and, when installed,
// `rclone copy --transfers Parallel`.
func runRestore(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	sz := e.cfg.Sizes
	store, err := openFleet(ctx, e, e.bucket, &res)
	if err != nil {
		return res, err
	}
	defer store.Close()
	root := filepath.Join(e.tmp, "restored")
	var entries atomic.Int64
	var restored atomic.Int64
	d, err := timeIt(func() error {
		// One recursive listing of the fleet; each session is restored from it as
		// soon as the listing has passed it, Parallel sessions at a time.
		err := store.ForEachListedSession(ctx, "", fleetAgent, sz.Parallel, func(ctx context.Context, l *transcript.Listed) error {
			sid := l.Ref().SessionID
			tree, _, err := sessiontree.Restore(ctx, sessiontree.Config{Root: root, Remote: l, NoSync: true}, sessiontree.RuntimeContext{}, fleetAgent, sid)
			if err != nil {
				return fmt.Errorf("restore %s: %w", sid, err)
			}
			entries.Add(int64(tree.Len()))
			restored.Add(1)
			return tree.Flush(ctx)
		})
		if err == nil && restored.Load() != int64(sz.Sessions) {
			err = fmt.Errorf("restored %d sessions, want %d", restored.Load(), sz.Sessions)
		}
		return err
	})
	if err != nil {
		return res, err
	}
	if want := int64(sz.Sessions * sz.SessionSegments * 3); entries.Load() != want {
		return res, fmt.Errorf("restored %d entries, want %d", entries.Load(), want)
	}
	e.logf("restore: %d sessions in %v", sz.Sessions, d)

	// The store restores Parallel sessions at a time, each fetching up to
	// DefaultReadConcurrency segments at once: the baselines get as many requests in
	// flight.
	inflight := sz.Parallel * transcript.DefaultReadConcurrency
	client, name := e.s3().Client(), e.s3().Name()
	prefix := store.Prefix() + "/"
	rawDir := filepath.Join(e.tmp, "raw")
	var objects, bytesIn atomic.Int64
	rawD, err := timeIt(func() error {
		var keys []string
		for o := range client.ListObjects(ctx, name, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if o.Err != nil {
				return o.Err
			}
			keys = append(keys, o.Key)
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(inflight)
		for _, k := range keys {
			g.Go(func() error {
				obj, err := client.GetObject(gctx, name, k, minio.GetObjectOptions{})
				if err != nil {
					return err
				}
				defer obj.Close()
				p := filepath.Join(rawDir, filepath.FromSlash(strings.TrimPrefix(k, prefix)))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				f, err := os.Create(p)
				if err != nil {
					return err
				}
				n, err := io.Copy(f, obj)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				objects.Add(1)
				bytesIn.Add(n)
				return err
			})
		}
		return g.Wait()
	})
	if err != nil {
		return res, err
	}
	e.logf("minio-go copy: %d objects in %v", objects.Load(), rawD)
	n := float64(sz.Sessions)
	note := fmt.Sprintf("%d sessions × %d segments (%d objects, %.1f MB); store: %d sessions at a time × %d segment GETs each; "+
		"baselines: %d requests in flight; restore writes the two SessionTree files per session (no fsync, like the baselines)",
		sz.Sessions, sz.SessionSegments, objects.Load(), float64(bytesIn.Load())/mb, sz.Parallel, transcript.DefaultReadConcurrency, inflight)
	res.Rows = append(res.Rows, row(6, "restore sessions from the bucket", "sessions/s", n/d.Seconds(),
		fmt.Sprintf("minio-go list + %d parallel GetObject into files", inflight), n/rawD.Seconds(), true, note))

	if bin, err := exec.LookPath("rclone"); err != nil {
		res.Rows = append(res.Rows, Row{Item: 6, Name: "restore vs rclone copy", Skipped: "rclone not on PATH"})
	} else {
		rcD, err := rcloneCopy(ctx, e, bin, name, prefix, filepath.Join(e.tmp, "rclone"), inflight)
		if err != nil {
			return res, err
		}
		e.logf("rclone copy: %v", rcD)
		res.Rows = append(res.Rows, row(6, "restore sessions from the bucket", "sessions/s", n/d.Seconds(),
			fmt.Sprintf("rclone copy --transfers %d", inflight), n/rcD.Seconds(), true, ""))
	}
	return res, nil
}

// rcloneCopy copies bucket/prefix into dir with rclone, configured through the
// environment only (remote "bench"), and returns how long it took.
func rcloneCopy(ctx context.Context, e *env, bin, bucketName, prefix, dir string, transfers int) (time.Duration, error) {
	loc, err := bucketurl.Parse(e.cfg.Store)
	if err != nil {
		return 0, err
	}
	scheme := "https://"
	if loc.S3.Insecure {
		scheme = "http://"
	}
	region := loc.S3.Region
	if region == "" {
		region = "us-east-1"
	}
	p := fmt.Sprint(transfers)
	cmd := exec.CommandContext(ctx, bin, "copy", "bench:"+bucketName+"/"+prefix, dir, "--transfers", p, "--checkers", p)
	var cenv []string
	for _, kv := range os.Environ() {
		// The AWS SDK inside rclone refuses a custom CA bundle with its transport.
		if !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
			cenv = append(cenv, kv)
		}
	}
	cmd.Env = append(cenv,
		"RCLONE_CONFIG=/dev/null",
		"RCLONE_CONFIG_BENCH_TYPE=s3",
		"RCLONE_CONFIG_BENCH_PROVIDER=Minio",
		"RCLONE_CONFIG_BENCH_ENDPOINT="+scheme+loc.S3.Endpoint,
		"RCLONE_CONFIG_BENCH_ACCESS_KEY_ID="+os.Getenv("AWS_ACCESS_KEY_ID"),
		"RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY="+os.Getenv("AWS_SECRET_ACCESS_KEY"),
		"RCLONE_CONFIG_BENCH_REGION="+region,
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	d, err := timeIt(cmd.Run)
	if err != nil {
		return 0, fmt.Errorf("rclone copy: %w: %s", err, out.Bytes())
	}
	return d, nil
}

// runCompact is item 7: Store.Compact of every fleet session (DeleteAtOnce, so the
// run marks and deletes its inputs too), Parallel sessions at a time. The baseline
// is the bucket-level floor of the same work: per session one LIST, a GET of every
// segment and one PUT of their concatenation, without decoding, verifying,
// merging, encoding, marks or deletes.
func runCompact(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	sz := e.cfg.Sizes
	counted := mirrortest.Wrap(e.bucket)
	store, err := openFleet(ctx, e, counted, &res)
	if err != nil {
		return res, err
	}
	defer store.Close()
	sids, err := store.ListSessions(ctx, "", fleetAgent)
	if err != nil {
		return res, err
	}
	if len(sids) != sz.Sessions {
		return res, fmt.Errorf("listed %d sessions, want %d", len(sids), sz.Sessions)
	}
	forEach := func(fn func(ctx context.Context, sid string) error) (time.Duration, error) {
		return timeIt(func() error {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(sz.Parallel)
			for _, sid := range sids {
				g.Go(func() error { return fn(gctx, sid) })
			}
			return g.Wait()
		})
	}
	var floorBytes atomic.Int64
	floorD, err := forEach(func(ctx context.Context, sid string) error {
		var keys []string
		p := path.Join(store.Prefix(), transcript.DefaultNamespace, fleetAgent, sid) + "/"
		if err := e.bucket.List(ctx, bucket.ListOptions{Prefix: p}, func(o bucket.ObjectInfo) error {
			keys = append(keys, o.Key)
			return nil
		}); err != nil {
			return err
		}
		// Compact fetches a session's segments DefaultReadConcurrency at a time; so
		// does the floor.
		parts := make([][]byte, len(keys))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(transcript.DefaultReadConcurrency)
		for i, k := range keys {
			g.Go(func() error {
				rc, _, err := e.bucket.Get(gctx, k)
				if err != nil {
					return err
				}
				defer rc.Close()
				parts[i], err = io.ReadAll(rc)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		buf := bytes.NewBuffer(bytes.Join(parts, nil))
		floorBytes.Add(int64(buf.Len()))
		return e.bucket.Put(ctx, e.key("raw", "compact", sid), bytes.NewReader(buf.Bytes()), int64(buf.Len()), bucket.PutOptions{})
	})
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	e.logf("floor: %d sessions in %v", len(sids), floorD)
	counted.ResetCounts()
	var in, out, segsIn atomic.Int64
	d, err := forEach(func(ctx context.Context, sid string) error {
		r, err := store.Compact(ctx, transcript.TranscriptRef{AgentID: fleetAgent, SessionID: sid},
			transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
		if err != nil {
			return err
		}
		in.Add(r.BytesIn())
		out.Add(r.BytesOut())
		segsIn.Add(int64(r.SegmentsIn()))
		return nil
	})
	if err != nil {
		return res, err
	}
	if want := int64(sz.Sessions * sz.SessionSegments); segsIn.Load() != want {
		return res, fmt.Errorf("compacted %d segments, want %d", segsIn.Load(), want)
	}
	c := counted.Counts()
	e.logf("compaction: %d sessions in %v, %s", len(sids), d, breakdown(c))
	n := float64(len(sids))
	res.Rows = append(res.Rows,
		row(7, "compaction throughput", "sessions/s", n/d.Seconds(), "floor: LIST + parallel GETs + 1 PUT per session", n/floorD.Seconds(), true,
			fmt.Sprintf("%d sessions × %d segments, parallelism %d; DeleteAtOnce; requests per session: %s", len(sids), sz.SessionSegments, sz.Parallel,
				breakdown(scaled(c, 1/n)))),
		row(7, "compaction throughput (stored bytes in)", "MB/s", float64(in.Load())/mb/d.Seconds(), "floor (same bytes)", float64(floorBytes.Load())/mb/floorD.Seconds(), true,
			fmt.Sprintf("%.1f MB in → %.1f MB out", float64(in.Load())/mb, float64(out.Load())/mb)))
	return res, nil
}
