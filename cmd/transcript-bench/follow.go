package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/internal/followmirror"
	"github.com/transcriptstore/transcript/internal/rusage"
	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// runFollowItems is items 13 and 14, the follower (transcript follow) in this
// process, with its mirror's outbox, against --store.
//
// Item 13: latency from "Pi appends a line" to "its segment is listable in the
// bucket", with 1 and with 50 sessions written at once. Each session's writer
// appends one line the way Pi does (open for append, one write of the JSON and
// its newline, close), at a random phase, then waits until the
// bucket holds the session's next segment: when the PUT of its key returned
// (S3 and MinIO list a key once its PUT returned; a wrapper of the bucket
// notes the time, and a listing at the end checks that every segment is
// listed). The baseline is the batch interval the follower waits after a
// file's first change, the floor of the design.
//
// Item 14: the follower's CPU while nothing changes, on a root of 1,000 session
// files in 50 folders (Pi's layout) that it has uploaded: getrusage of the
// process over the window, as CPU seconds per minute, with the default rescan
// interval.
func runFollowItems(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	for _, n := range e.cfg.Sizes.FollowSessions {
		if err := followLatency(ctx, e, n, &res); err != nil {
			return res, fmt.Errorf("follow latency, %d sessions: %w", n, err)
		}
	}
	store, err := e.newStore(e.bucket, "follow")
	if err != nil {
		return res, err
	}
	defer store.Close()
	if err := followIdle(ctx, e, store, &res); err != nil {
		return res, fmt.Errorf("follow idle: %w", err)
	}
	return res, nil
}

// benchFollower is a follower running in this process.
type benchFollower struct {
	up     *followmirror.Uploader
	f      *follow.Follower
	cancel context.CancelFunc
	done   chan error
}

// startFollower runs a follower of root into namespace ns of store.
func startFollower(ctx context.Context, e *env, store *transcript.Store, root, ns string, batch time.Duration) (*benchFollower, error) {
	state := filepath.Join(e.tmp, ns+"-state")
	up, err := followmirror.Open(store, followmirror.Config{Writer: transcript.NewRandomWriter(), OutboxDir: filepath.Join(state, "outbox")})
	if err != nil {
		return nil, err
	}
	f, err := follow.New(follow.Config{Root: root, StateDir: state, Uploader: up, Store: up, Namespace: ns, BatchInterval: batch})
	if err != nil {
		return nil, errors.Join(err, up.Close(ctx))
	}
	rctx, cancel := context.WithCancel(ctx)
	b := &benchFollower{up: up, f: f, cancel: cancel, done: make(chan error, 1)}
	go func() { b.done <- f.Run(rctx) }()
	return b, nil
}

func (b *benchFollower) stop(ctx context.Context) error {
	b.cancel()
	err := <-b.done
	return errors.Join(err, b.f.Close(), b.up.Close(ctx))
}

// writeSessions writes n Pi session files (a header and one turn each) under
// root, spread over folders folders, and returns their paths, generators and
// sessions (in namespace ns).
func writeSessions(root, ns string, n, folders int) ([]string, []*gen, []transcript.TranscriptRef, error) {
	paths := make([]string, n)
	gens := make([]*gen, n)
	refs := make([]transcript.TranscriptRef, n)
	for i := range n {
		gens[i] = newGen(fmt.Sprintf("s%04d", i), uint64(i))
		folder := fmt.Sprintf("--work-project-%02d--", i%folders)
		refs[i] = transcript.TranscriptRef{Namespace: ns, AgentID: folder, SessionID: gens[i].sid}
		dir := filepath.Join(root, folder)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, nil, err
		}
		paths[i] = filepath.Join(dir, fmt.Sprintf("2026-04-06T04-00-00-000Z_s%04d.jsonl", i))
		lines := append([][]byte{gens[i].header()}, gens[i].next()...)
		var data []byte
		for _, l := range lines {
			data = append(append(data, l...), '\n')
		}
		if err := os.WriteFile(paths[i], data, 0o644); err != nil {
			return nil, nil, nil, err
		}
	}
	return paths, gens, refs, nil
}

// piAppend appends line as Pi 1.6's appendFileSync does (no fsync).
func piAppend(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(append(slices.Clip(line), '\n'))
	return errors.Join(err, f.Close())
}

// segmentWatch is a bucket that tells waiters when a session's next segment
// is stored: when the PUT of its key returned (S3 and MinIO list a key as soon
// as its PUT returned, so this is when the segment is listable).
type segmentWatch struct {
	bucket.Bucket
	prefix  string // the store's key prefix
	mu      sync.Mutex
	keys    map[string]map[string]bool // the segment keys stored, by session id
	waiters map[string]*segmentWaiter
}

type segmentWaiter struct {
	want int
	seen chan time.Time
}

func newSegmentWatch(b bucket.Bucket, prefix string) *segmentWatch {
	return &segmentWatch{Bucket: b, prefix: prefix, keys: map[string]map[string]bool{}, waiters: map[string]*segmentWaiter{}}
}

// Put stores the object, then counts a segment of its session and wakes the
// session's waiter once it holds the segments it waits for.
func (w *segmentWatch) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if err := w.Bucket.Put(ctx, key, r, size, opts); err != nil {
		return err
	}
	stored := time.Now()
	info, err := transcript.ParseKey(w.prefix, key)
	if err != nil {
		return nil
	}
	sid := info.Ref.SessionID
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys[sid] == nil {
		w.keys[sid] = map[string]bool{}
	}
	w.keys[sid][key] = true
	if wt, ok := w.waiters[sid]; ok && len(w.keys[sid]) >= wt.want {
		wt.seen <- stored
		delete(w.waiters, sid)
	}
	return nil
}

// wait returns when session sid holds want segments, with the time the PUT
// that made it so returned.
func (w *segmentWatch) wait(ctx context.Context, sid string, want int) (time.Time, error) {
	wt := &segmentWaiter{want: want, seen: make(chan time.Time, 1)}
	w.mu.Lock()
	if len(w.keys[sid]) >= want {
		w.mu.Unlock()
		return time.Now(), nil
	}
	w.waiters[sid] = wt
	w.mu.Unlock()
	select {
	case t := <-wt.seen:
		return t, nil
	case <-time.After(time.Minute):
		return time.Time{}, fmt.Errorf("session %s: segment %d not stored within a minute", sid, want)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// requireListed checks that a listing shows each session of sessions with
// segments segments.
func requireListed(ctx context.Context, store *transcript.Store, sessions []transcript.TranscriptRef, segments int) error {
	for _, ref := range sessions {
		infos, err := store.ListSegments(ctx, ref)
		if err != nil {
			return err
		}
		if len(infos) != segments {
			return fmt.Errorf("session %s: %d segments listed, want %d", ref, len(infos), segments)
		}
	}
	return nil
}

// followLatency is item 13 with n sessions written at once.
func followLatency(ctx context.Context, e *env, n int, res *ItemResult) error {
	sz := e.cfg.Sizes
	ns := fmt.Sprintf("latency-%d", n)
	root := filepath.Join(e.tmp, ns, "sessions")
	paths, gens, refs, err := writeSessions(root, ns, n, min(n, 50))
	if err != nil {
		return err
	}
	watch := newSegmentWatch(e.bucket, e.key("follow"))
	store, err := e.newStore(watch, "follow")
	if err != nil {
		return err
	}
	defer store.Close()
	fl, err := startFollower(ctx, e, store, root, ns, sz.FollowBatch)
	if err != nil {
		return err
	}
	defer fl.stop(context.WithoutCancel(ctx))
	lat := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sid := gens[i].sid
			if _, errs[i] = watch.wait(ctx, sid, 1); errs[i] != nil {
				return
			}
			phase := rand.New(rand.NewPCG(uint64(i), 13))
			var lines [][]byte
			for r := range sz.FollowAppends {
				time.Sleep(time.Duration(phase.Int64N(int64(sz.FollowBatch))))
				if len(lines) == 0 {
					lines = gens[i].next()
				}
				if errs[i] = piAppend(paths[i], lines[0]); errs[i] != nil {
					return
				}
				lines = lines[1:]
				sent := time.Now()
				var seen time.Time
				if seen, errs[i] = watch.wait(ctx, sid, r+2); errs[i] != nil {
					return
				}
				lat[i] = append(lat[i], seen.Sub(sent))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	if err := requireListed(ctx, store, refs, sz.FollowAppends+1); err != nil {
		return err
	}
	note := fmt.Sprintf("%d appends (%d per session), each at a random phase; batch interval %v; listable = the PUT of the segment returned; max %.1f ms; mirror workers %d",
		len(all), sz.FollowAppends, sz.FollowBatch, ms(all[len(all)-1]), mirror.DefaultWorkers)
	e.logf("follow latency, %d sessions: p50 %.1f ms, p99 %.1f ms (batch %v)", n, ms(pct(0.5)), ms(pct(0.99)), sz.FollowBatch)
	base := fmt.Sprintf("the batch interval (%v)", sz.FollowBatch)
	res.Rows = append(res.Rows,
		row(13, fmt.Sprintf("follow: line appended → segment listable, %s at once: p50", sessionsLabel(n)), "ms", ms(pct(0.5)), base, ms(sz.FollowBatch), false, note),
		row(13, fmt.Sprintf("follow: line appended → segment listable, %s at once: p99", sessionsLabel(n)), "ms", ms(pct(0.99)), base, ms(sz.FollowBatch), false, note))
	return nil
}

func sessionsLabel(n int) string {
	if n == 1 {
		return "1 session"
	}
	return fmt.Sprintf("%d sessions", n)
}

// followIdle is item 14.
func followIdle(ctx context.Context, e *env, store *transcript.Store, res *ItemResult) error {
	sz := e.cfg.Sizes
	ns := "idle"
	root := filepath.Join(e.tmp, ns, "sessions")
	folders := min(sz.IdleSessions, 50)
	if _, _, _, err := writeSessions(root, ns, sz.IdleSessions, folders); err != nil {
		return err
	}
	fl, err := startFollower(ctx, e, store, root, ns, follow.DefaultBatchInterval)
	if err != nil {
		return err
	}
	defer fl.stop(context.WithoutCancel(ctx))
	deadline := time.Now().Add(5 * time.Minute)
	for st := fl.f.Status(); st.Following < sz.IdleSessions || st.LagBytes > 0; st = fl.f.Status() {
		if time.Now().After(deadline) {
			return fmt.Errorf("the follower took over 5 minutes to upload %d sessions (%+v)", sz.IdleSessions, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := fl.up.Await(ctx); err != nil {
		return err
	}
	before, err := rusage.SelfCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	select {
	case <-time.After(sz.IdleSeconds):
	case <-ctx.Done():
		return ctx.Err()
	}
	after, err := rusage.SelfCPU()
	if err != nil {
		return err
	}
	window := time.Since(start)
	perMinute := (after - before).Seconds() / window.Minutes()
	if st := fl.f.Status(); st.Entries == 0 || st.Following != sz.IdleSessions {
		return fmt.Errorf("the follower did not follow the %d sessions: %+v", sz.IdleSessions, st)
	}
	note := fmt.Sprintf("%d session files in %d folders, all uploaded before the window; %.0f s window, a rescan every %v (%d in the window), fsnotify watches on %d directories; getrusage user+system of the process",
		sz.IdleSessions, folders, window.Seconds(), follow.DefaultRescanInterval, int(window/follow.DefaultRescanInterval), folders+1)
	e.logf("follow idle: %.3f CPU s/min on %d sessions", perMinute, sz.IdleSessions)
	res.Rows = append(res.Rows, row(14, fmt.Sprintf("follow: CPU while idle on %d sessions", sz.IdleSessions), "CPU s/min", perMinute, "", 0, false, note))
	return nil
}
