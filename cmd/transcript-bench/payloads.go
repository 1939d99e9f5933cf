package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path"
	"path/filepath"
	"time"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// payloadAgent is the agent of item 18's sessions.
const payloadAgent = "imager"

// payloadOwner owns item 18's sessions: a repository (repository.ForkSession,
// transcript-serve's fork) reads them in its namespace.
var payloadOwner = repository.Owner{Tenant: "bench", User: "imager"}

// payloadMode is one way item 18 stores its sessions: large payloads outside the
// segments (the default), or inline (the baseline).
type payloadMode struct {
	name      string
	threshold int // transcript.Config.PayloadThreshold
}

// payloadFigures are what item 18 measured of one mode.
type payloadFigures struct {
	write, fork, compact time.Duration
	stored, forkBytes    int64
	forkCounts           counts                // requests of one fork (the mean over the forks)
	compactedFork        time.Duration         // time of one fork of the compacted session
	compactedCounts      counts                // its requests
	heldFork             time.Duration         // time of one fork of an open session (see forkHeld)
	heldCounts           counts                // its requests
	cli                  map[string][2]float64 // command -> peak RSS (MiB), seconds
}

// runPayloads measures item 18: a session whose bytes are mostly images
// (Sizes.PayloadSessionMiB of base64 PNG-like data in images of
// Sizes.PayloadImageKiB, one per turn, with a short text reply), forked
// Sizes.PayloadForks times and compacted once, stored with large payloads outside
// the segments and, in the same run, inline: bytes stored, bytes and time per fork,
// the compaction's time, and the time and peak RSS of the CLI's tree, ls,
// verify --no-payloads (which read no payload) and restore.
func runPayloads(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	title := "large payloads outside the segments vs inline"
	if _, err := cliStoreURL(e.cfg.Store, e.cfg.RunPrefix); err != nil {
		res.Rows = []Row{{Item: 18, Name: title, Skipped: err.Error()}}
		return res, nil
	}
	bin := filepath.Join(e.tmp, "transcript")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/transcriptstore/transcript/cmd/transcript")
	if out, err := build.CombinedOutput(); err != nil {
		return res, fmt.Errorf("go build the transcript CLI: %w: %s", err, out)
	}
	modes := []payloadMode{{"outside", 0}, {"inline", -1}}
	figs := make([]payloadFigures, len(modes))
	for i, m := range modes {
		storeURL, err := cliStoreURL(e.cfg.Store, path.Join(e.cfg.RunPrefix, "payloads", m.name))
		if err != nil {
			return res, err
		}
		if figs[i], err = e.payloadMode(ctx, m, bin, storeURL); err != nil {
			return res, fmt.Errorf("%s: %w", m.name, err)
		}
	}
	out, in := figs[0], figs[1]
	sz := e.cfg.Sizes
	note := fmt.Sprintf("%d MiB session of %d KiB images, %d forks, one compaction", sz.PayloadSessionMiB, sz.PayloadImageKiB, sz.PayloadForks)
	res.Rows = append(res.Rows,
		row(18, "bytes stored (session, forks, compaction)", "MiB", mib(out.stored), "inline", mib(in.stored), false, note+"; goal ≤ 0.2× inline"),
		row(18, "bytes stored per fork", "MiB", mib(out.forkBytes), "inline", mib(in.forkBytes), false, "goal ≤ 0.01× inline"),
		row(18, "time per fork (read the session as stored, write it as a new one)", "s", out.fork.Seconds(), "inline", in.fork.Seconds(), false,
			"the fork copies references: it reads, hashes and stores no payload; goal ≤ 0.01× inline"),
		row(18, "requests per fork", "requests", float64(out.forkCounts.Requests()), "inline", float64(in.forkCounts.Requests()), false,
			fmt.Sprintf("outside: %s; inline: %s", out.forkCounts.describe(), in.forkCounts.describe())),
		row(18, "time per fork of an open session (repository.ForkSession, as transcript-serve forks)", "s", out.heldFork.Seconds(), "inline",
			in.heldFork.Seconds(), false, fmt.Sprintf("the uncompacted session held open, %d times; outside: %s; inline (its entries written as a new session): %s; goal ≤ 0.01× inline",
				min(3, sz.PayloadForks), out.heldCounts.describe(), in.heldCounts.describe())),
		row(18, "time per fork of the compacted session", "s", out.compactedFork.Seconds(), "inline", in.compactedFork.Seconds(), false,
			fmt.Sprintf("the same fork after the compaction, %d times; goal ≤ 0.01× inline", min(3, sz.PayloadForks))),
		row(18, "requests per fork of the compacted session", "requests", float64(out.compactedCounts.Requests()), "inline",
			float64(in.compactedCounts.Requests()), false,
			fmt.Sprintf("outside: %s; inline: %s", out.compactedCounts.describe(), in.compactedCounts.describe())),
		row(18, "time to write the session", "s", out.write.Seconds(), "inline", in.write.Seconds(), false, "one segment per turn"),
		row(18, "compaction of the session", "s", out.compact.Seconds(), "inline", in.compact.Seconds(), false, "copies references, not payloads"))
	for _, cmd := range []string{"tree", "ls", "verify --no-payloads", "restore"} {
		o, b := out.cli[cmd], in.cli[cmd]
		res.Rows = append(res.Rows,
			row(18, cmd+": peak RSS", "MiB", o[0], "inline", b[0], false, "CLI subprocess, getrusage ru_maxrss"),
			row(18, cmd+": time", "s", o[1], "inline", b[1], false, "wall time of the CLI subprocess"))
	}
	return res, nil
}

// payloadMode writes, forks and compacts item 18's session in one mode under its
// own prefix, and runs the CLI's reads on it.
func (e *env) payloadMode(ctx context.Context, m payloadMode, bin, storeURL string) (payloadFigures, error) {
	f := payloadFigures{cli: map[string][2]float64{}}
	sub := path.Join("payloads", m.name)
	cb, err := countBucket(e.bucket)
	if err != nil {
		return f, err
	}
	s, err := transcript.New(transcript.Config{Bucket: cb, Prefix: e.key(sub), PayloadThreshold: m.threshold})
	if err != nil {
		return f, err
	}
	defer s.Close()
	w, err := transcript.NewWriter("bench-" + m.name)
	if err != nil {
		return f, err
	}
	ns, err := payloadOwner.Namespace()
	if err != nil {
		return f, err
	}
	src := transcript.TranscriptRef{Namespace: ns, AgentID: payloadAgent, SessionID: "source"}
	if f.write, err = timeIt(func() error { return writeImageSession(ctx, s, src, e.cfg.Sizes, w) }); err != nil {
		return f, err
	}
	before, err := storedBytes(ctx, e.bucket, e.key(sub)+"/")
	if err != nil {
		return f, err
	}
	forks := e.cfg.Sizes.PayloadForks
	if f.fork, f.forkCounts, err = timeForks(ctx, cb, s, src, "fork", forks, w); err != nil {
		return f, err
	}
	after, err := storedBytes(ctx, e.bucket, e.key(sub)+"/")
	if err != nil {
		return f, err
	}
	f.forkBytes = (after - before) / int64(max(1, forks))
	if f.heldFork, f.heldCounts, err = e.forkHeld(ctx, cb, s, m, src, min(3, forks), w); err != nil {
		return f, err
	}
	// Those forks are not counted in the bytes stored: the figure stays that
	// of the session, its forks above and the compaction.
	held, err := storedBytes(ctx, e.bucket, e.key(sub)+"/")
	if err != nil {
		return f, err
	}
	if f.compact, err = timeIt(func() error {
		_, err := s.Compact(ctx, src, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
		return err
	}); err != nil {
		return f, err
	}
	if f.stored, err = storedBytes(ctx, e.bucket, e.key(sub)+"/"); err != nil {
		return f, err
	}
	f.stored -= held - after
	e.logf("%s: %.1f MiB stored, %.2f MiB and %v per fork, write %v, compaction %v", m.name, mib(f.stored), mib(f.forkBytes),
		f.fork.Round(time.Millisecond), f.write.Round(time.Millisecond), f.compact.Round(time.Millisecond))
	sel := []string{"--store", storeURL, "--ns", ns, "--agent", payloadAgent}
	for _, r := range []struct {
		name string
		args []string
	}{
		{"tree", append([]string{"tree", "--session", "source"}, sel...)},
		{"ls", append([]string{"ls"}, sel...)},
		{"verify --no-payloads", append([]string{"verify", "--no-payloads", "--session", "source"}, sel...)},
		{"restore", append([]string{"restore", "--session", "source", "--out", filepath.Join(e.tmp, "restore-"+m.name)}, sel...)},
	} {
		rss, d, err := runMeasured(ctx, bin, r.args)
		if err != nil {
			return f, fmt.Errorf("%s: %w", r.name, err)
		}
		f.cli[r.name] = [2]float64{mib(rss), d.Seconds()}
		e.logf("%s: %s: peak RSS %.1f MiB, %v", m.name, r.name, mib(rss), d.Round(time.Millisecond))
	}
	// Last (so that the figures above do not count them), forks of the session
	// as compaction left it: the read of the source is then a few GETs.
	if f.compactedFork, f.compactedCounts, err = timeForks(ctx, cb, s, src, "compacted-fork", min(3, forks), w); err != nil {
		return f, err
	}
	e.logf("%s: %v per fork of the compacted session (%s)", m.name, f.compactedFork.Round(time.Millisecond), f.compactedCounts.describe())
	return f, nil
}

// forkHeld times n forks of session src held open, as transcript-serve forks
// a session it serves: with large payloads outside, repository.ForkSession (whole)
// of a handle opened once beforehand (not timed), which copies the references
// the handle knows and reads no segment of src. Inline, a repository cannot fork
// a session larger than a segment (its fork is one segment), so the baseline is
// the same work a fork of an open session must do there: the entries, read once
// beforehand, written as a new session (Store.AppendSegments). It returns the
// mean time and requests of one fork.
func (e *env) forkHeld(ctx context.Context, cb *counted, s *transcript.Store, m payloadMode, src transcript.TranscriptRef, n int,
	w *transcript.Writer) (time.Duration, counts, error) {
	var fork func(i int) error
	if m.threshold >= 0 {
		repo, err := repository.New(s, payloadOwner, repository.Config{AgentID: payloadAgent, Writer: w})
		if err != nil {
			return 0, counts{}, err
		}
		defer repo.Close()
		sess, err := repo.Open(ctx, src.SessionID)
		if err != nil {
			return 0, counts{}, fmt.Errorf("open the source: %w", err)
		}
		fork = func(i int) error {
			_, err := repo.ForkSession(ctx, sess, repository.ForkOptions{ID: fmt.Sprintf("held-fork-%d", i), Whole: true})
			return err
		}
	} else {
		res, err := s.ReadAll(ctx, src)
		if err != nil {
			return 0, counts{}, fmt.Errorf("read the source: %w", err)
		}
		raws := make([][]byte, len(res.Entries))
		for i, en := range res.Entries {
			raws[i] = en.Raw
		}
		fork = func(i int) error {
			ref := src
			ref.SessionID = fmt.Sprintf("held-fork-%d", i)
			_, err := s.AppendSegments(ctx, ref, raws, w)
			return err
		}
	}
	return timeEach(cb, "fork of the open session", n, fork)
}

// timeForks forks src n times (forkStored) as sessions named prefix-i, and
// returns the mean time and requests of one fork.
func timeForks(ctx context.Context, cb *counted, s *transcript.Store, src transcript.TranscriptRef, prefix string, n int,
	w *transcript.Writer) (time.Duration, counts, error) {
	return timeEach(cb, prefix, n, func(i int) error { return forkStored(ctx, s, src, fmt.Sprintf("%s-%d", prefix, i), w) })
}

// timeEach runs fn(0) to fn(n-1) in turn, and returns the mean time and
// requests (through cb) of one; an error names what (name) and which.
func timeEach(cb *counted, name string, n int, fn func(i int) error) (time.Duration, counts, error) {
	var total counts
	var sum time.Duration
	for i := range n {
		var d time.Duration
		c, err := cb.measure(func() (err error) {
			d, err = timeIt(func() error { return fn(i) })
			return err
		})
		if err != nil {
			return 0, counts{}, fmt.Errorf("%s %d: %w", name, i, err)
		}
		sum += d
		total = total.add(c)
	}
	n = max(1, n)
	return sum / time.Duration(n), total.div(int64(n)), nil
}

// forkStored forks session src as session id of its agent, whole, as a fork
// that copies references does: one look at the namespace's payload marks, then
// the source read as stored (no payload), then the entries written as they were
// read (AppendChecked: no payload is read, hashed or looked at; one segment when
// the references make the session small, as here).
func forkStored(ctx context.Context, s *transcript.Store, src transcript.TranscriptRef, id string, w *transcript.Writer) error {
	chk, err := s.CheckPayloads(ctx, src.Namespace)
	if err != nil {
		return err
	}
	res, err := s.Stored().ReadAll(ctx, src)
	if err != nil {
		return err
	}
	fork := src
	fork.SessionID = id
	_, err = s.AppendChecked(ctx, fork, chk, res.Entries, w)
	return err
}

// writeImageSession writes item 18's session: a header, then per turn a user
// message holding one image of random base64 and a short assistant reply, one
// segment per turn, until the images add up to Sizes.PayloadSessionMiB.
func writeImageSession(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, sz Sizes, w *transcript.Writer) error {
	r := rand.NewChaCha8([32]byte{15})
	raw := make([]byte, sz.PayloadImageKiB<<10*3/4)
	parent := "h"
	batch := [][]byte{[]byte(`{"type":"session","version":3,"id":"h","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`)}
	for turn := 0; turn*sz.PayloadImageKiB < sz.PayloadSessionMiB<<10; turn++ {
		_, _ = r.Read(raw)
		u, a := fmt.Sprintf("u%06d", turn), fmt.Sprintf("a%06d", turn)
		batch = append(batch,
			fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"what is on screen %d?"},{"type":"image","data":%q,"mimeType":"image/png"}]}}`,
				u, parent, turn, base64.StdEncoding.EncodeToString(raw)),
			fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"A terminal, turn %d."}]}}`,
				a, u, turn))
		parent = a
		if _, err := s.AppendSegments(ctx, ref, batch, w); err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		batch = batch[:0]
	}
	return nil
}

// storedBytes returns the size of every object under prefix.
func storedBytes(ctx context.Context, b bucket.Bucket, prefix string) (int64, error) {
	var n int64
	err := b.List(ctx, bucket.ListOptions{Prefix: prefix}, func(oi bucket.ObjectInfo) error {
		n += oi.Size
		return nil
	})
	return n, err
}
