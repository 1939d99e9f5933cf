package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

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
