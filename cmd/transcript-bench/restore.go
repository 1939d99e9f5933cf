package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/internal/rclone"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// runRestore is item 6: restore every session of the fleet from the bucket alone
// into local SessionTree files as `transcript restore` does into an empty
// directory (one recursive listing, sessions fetched ahead of their turn, then a
// lean read and sessiontree.WriteRestoredLean per session), Parallel sessions at
// a time, against copying the same objects with minio-go
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
	d, err := timeIt(func() error { return restoreFleet(ctx, e, store) })
	if err != nil {
		return res, err
	}
	e.logf("restore: %d sessions in %v", sz.Sessions, d)

	// The store restores Parallel sessions at a time, sharing Parallel ×
	// DefaultReadConcurrency GET slots: the baselines get as many requests in flight.
	inflight := sz.Parallel * transcript.DefaultReadConcurrency
	name, prefix := e.s3().Name(), store.Prefix()+"/"
	var objects, bytesIn int64
	rawD, err := timeIt(func() (err error) {
		objects, bytesIn, err = copyObjects(ctx, e, prefix, filepath.Join(e.tmp, "raw"), inflight)
		return err
	})
	if err != nil {
		return res, err
	}
	e.logf("minio-go copy: %d objects in %v", objects, rawD)
	n := float64(sz.Sessions)
	note := fmt.Sprintf("%d sessions × %d segments (%d objects, %.1f MB); store: %d sessions at a time (and up to %d fetched ahead) sharing %d GETs in flight; "+
		"baselines: %d requests in flight; restore writes the two SessionTree files per session (no fsync, like the baselines)",
		sz.Sessions, sz.SessionSegments, objects, float64(bytesIn)/mb, sz.Parallel, sz.Parallel+1, inflight, inflight)
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

// restoreFleet restores every session of the fleet into e.tmp/restored, as
// `transcript restore` does: one recursive listing; each session is fetched as
// soon as the listing has passed it (up to Parallel sessions ahead) and restored,
// Parallel sessions at a time. It checks the count of sessions and entries.
func restoreFleet(ctx context.Context, e *env, store *transcript.Store) error {
	sz := e.cfg.Sizes
	root := filepath.Join(e.tmp, "restored")
	var entries, restored atomic.Int64
	every := func(transcript.TranscriptRef) bool { return true }
	err := store.ForEachListedSessionAhead(ctx, "", fleetAgent, sz.Parallel, every, func(ctx context.Context, l *transcript.Listed) error {
		sid := l.Ref().SessionID
		res, err := l.ReadLean(ctx, l.Ref())
		if err != nil {
			return fmt.Errorf("restore %s: %w", sid, err)
		}
		r, err := sessiontree.WriteRestoredLean(sessiontree.Config{Root: root, NoSync: true}, sessiontree.Identity{}, fleetAgent, sid, res)
		if err != nil {
			return err
		}
		entries.Add(int64(r.Entries))
		restored.Add(1)
		return nil
	})
	if err != nil {
		return err
	}
	if restored.Load() != int64(sz.Sessions) {
		return fmt.Errorf("restored %d sessions, want %d", restored.Load(), sz.Sessions)
	}
	if want := int64(sz.Sessions * sz.SessionSegments * 3); entries.Load() != want {
		return fmt.Errorf("restored %d entries, want %d", entries.Load(), want)
	}
	return nil
}

// copyObjects is the minio-go baseline of restore: one listing of prefix, then
// GetObject of every object into a file under dir, inflight at a time. It
// returns the objects and bytes copied.
func copyObjects(ctx context.Context, e *env, prefix, dir string, inflight int) (objects, size int64, err error) {
	client, name := e.s3().Client(), e.s3().Name()
	var keys []string
	for o := range client.ListObjects(ctx, name, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return 0, 0, o.Err
		}
		keys = append(keys, o.Key)
	}
	var nObjects, nBytes atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inflight)
	for _, k := range keys {
		g.Go(func() error {
			obj, err := client.GetObject(gctx, name, k, minio.GetObjectOptions{})
			if err != nil {
				return err
			}
			defer obj.Close()
			p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(k, prefix)))
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
			nObjects.Add(1)
			nBytes.Add(n)
			return err
		})
	}
	err = g.Wait()
	return nObjects.Load(), nBytes.Load(), err
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
	p := fmt.Sprint(transfers)
	cmd := rclone.Command(ctx, bin, rclone.Remote{
		Name:     "bench",
		Endpoint: scheme + loc.S3.Endpoint,
		Access:   os.Getenv("AWS_ACCESS_KEY_ID"),
		Secret:   os.Getenv("AWS_SECRET_ACCESS_KEY"),
		Region:   loc.S3.Region,
	}, "copy", "bench:"+bucketName+"/"+prefix, dir, "--transfers", p, "--checkers", p)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	d, err := timeIt(cmd.Run)
	if err != nil {
		return 0, fmt.Errorf("rclone copy: %w: %s", err, out.Bytes())
	}
	return d, nil
}
