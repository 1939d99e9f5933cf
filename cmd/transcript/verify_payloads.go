package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
)

// payloadUse is one payload the checked segments reference: its size, how many
// references there are to it, and the first segment (key, session) that holds one.
type payloadUse struct {
	size    uint64
	refs    int
	key     string
	session string
	ns      string
}

// notePayloads records the payload references of the segment at key.
func (v *sessionVerifier) notePayloads(key string, refs []segment.PayloadRef) {
	for _, r := range refs {
		u, ok := v.c.payloads[r.Hash]
		if !ok {
			u = payloadUse{size: r.Size, key: key, session: v.ref.String(), ns: v.ref.Namespace}
		} else if u.size != r.Size {
			v.report(key, "payload %s referenced with sizes %d and %d", hex.EncodeToString(r.Hash[:]), u.size, r.Size)
		}
		u.refs++
		v.c.payloads[r.Hash] = u
	}
}

// payloadChecks is what checkPayloads found: every distinct payload referenced
// (per namespace) and the problems.
type payloadChecks struct {
	uses     map[payloadKey]payloadUse
	problems []verifyProblem
}

// payloadKey names a payload: payloads are stored per namespace.
type payloadKey struct {
	ns   string
	hash transcript.PayloadHash
}

// checkPayloads checks each distinct payload the sessions of checks reference
// once: that its object exists, and with fetch set that it decompresses to the
// referenced size and SHA-256. A missing or damaged payload is a problem naming
// the first segment that references it; only a cancelled ctx is an error.
func checkPayloads(ctx context.Context, s *transcript.Store, checks []sessionCheck, parallel int, fetch bool) (payloadChecks, error) {
	out := payloadChecks{uses: map[payloadKey]payloadUse{}}
	for _, c := range checks {
		for h, u := range c.payloads {
			k := payloadKey{ns: u.ns, hash: h}
			if prev, ok := out.uses[k]; ok {
				prev.refs += u.refs
				u = prev
			}
			out.uses[k] = u
		}
	}
	keys := make([]payloadKey, 0, len(out.uses))
	for k := range out.uses {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].ns != keys[j].ns {
			return keys[i].ns < keys[j].ns
		}
		return string(keys[i].hash[:]) < string(keys[j].hash[:])
	})
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, parallel))
	for _, k := range keys {
		g.Go(func() error {
			u := out.uses[k]
			err := s.CheckPayload(gctx, k.ns, k.hash, u.size, fetch)
			switch {
			case err == nil:
				return nil
			case gctx.Err() != nil:
				return gctx.Err()
			case !errors.Is(err, transcript.ErrPayloadMissing) && !errors.Is(err, segment.ErrCorrupt):
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			out.problems = append(out.problems, verifyProblem{Session: u.session, Key: u.key,
				Problem: fmt.Sprintf("payload %s (%d bytes, %s): %v", hex.EncodeToString(k.hash[:]), u.size, cmdcli.Count(u.refs, "reference"), err)})
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	sort.Slice(out.problems, func(i, j int) bool { return out.problems[i].Problem < out.problems[j].Problem })
	return out, nil
}
