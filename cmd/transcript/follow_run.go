package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/transcriptstore/transcript/follow"
	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/internal/followmirror"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// followRoot runs the follower on root with the flags' store and options, then
// stops the outbox (waiting --drain-timeout for its uploads) and prints the
// summary.
func followRoot(ctx context.Context, env *cliEnv, sf *storeFlags, o followOptions, root string, w *transcript.Writer) error {
	out := &followOutput{env: env, json: sf.json, progress: !sf.json && isTerminal(env.stderr)}
	s, err := openFollowStore(ctx, sf, out, o.once)
	if err != nil || s == nil {
		return err // s == nil: stopped while waiting for the store
	}
	defer s.Close()
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	up, err := followmirror.Open(s, followmirror.Config{Writer: w, OutboxDir: filepath.Join(o.stateDir, "outbox"), Workers: o.workers, Logger: logger})
	if err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	fl, err := follow.New(follow.Config{Root: root, StateDir: o.stateDir, Uploader: up, Store: up,
		Namespace: sf.Namespace, Agent: sf.Agent, FollowerID: o.followerID, BatchInterval: o.batch, RescanInterval: o.rescan,
		StuckAfter: o.stuckAfter, DrainTimeout: o.drain, NoWatch: o.noWatch, OnEvent: out.event})
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drain)
		defer cancel()
		return errors.Join(err, up.Close(cctx))
	}
	defer fl.Close()
	stopMetrics, err := serveFollowMetrics(o.metricsAddr, fl.Collector(), up.Collector())
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.drain)
		defer cancel()
		return errors.Join(err, up.Close(cctx))
	}
	// --drain-timeout bounds the whole shutdown: the follower's last pass, then
	// the outbox's uploads.
	stopped := make(chan time.Time, 1)
	defer context.AfterFunc(ctx, func() { stopped <- time.Now() })()
	var runErr error
	if o.once {
		runErr = fl.Once(ctx)
		if runErr == nil || errors.Is(runErr, follow.ErrStuck) {
			actx, cancel := context.WithTimeout(ctx, o.drain)
			if err := up.Await(actx); err != nil {
				runErr = errors.Join(runErr, fmt.Errorf("follow: the outbox did not upload everything within --drain-timeout %v (what is left uploads at the next run): %w", o.drain, err))
			}
			cancel()
		}
	} else {
		runErr = fl.Run(ctx)
	}
	deadline := time.Now().Add(o.drain)
	select {
	case at := <-stopped:
		deadline = at.Add(o.drain)
	default:
	}
	cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	_ = up.Close(cctx) // what is left stays in the outbox; the summary counts it
	stopMetrics()
	if err := out.summary(root, fl.Status(), up.PendingSegments()); err != nil {
		return err
	}
	return runErr // Run returns nil after SIGTERM or SIGINT
}

// The bounds of waiting for a store that cannot be reached at start: the first
// retry comes followRetryMin after the first failure, each next one twice as
// late, at most followRetryMax.
const (
	followRetryMin = time.Second
	followRetryMax = 30 * time.Second
)

// The events follow adds to the follower's: it waits for the store at start,
// and the store answered after a wait.
const (
	eventWaiting follow.EventKind = "waiting"
	eventReady   follow.EventKind = "ready"
)

// openFollowStore opens --store for follow. A store that is unavailable (not
// reached, timing out, or answering 503) is waited for, unless once: reported
// by one "waiting" event, then tried again with a growing interval (up to
// followRetryMax) until it answers, reported by a "ready" event. It returns a
// nil store and no error when ctx ends while waiting. Any other failure (a
// missing bucket, refused credentials, a bad URL) is returned at once.
//
// Following waits for the store rather than filling the outbox meanwhile: the
// mirror needs the opened store, and every file the follower has not followed
// before is reconciled against the store before its first line goes to the
// outbox, so little could be followed without it; Pi's files keep what it
// writes meanwhile, and are read from the offsets the state file recorded.
func openFollowStore(ctx context.Context, sf *storeFlags, out *followOutput, once bool) (*transcript.Store, error) {
	delay := followRetryMin
	var since time.Time
	for {
		s, err := sf.openStoreToWrite(ctx)
		switch {
		case err == nil:
			if !since.IsZero() {
				out.event(follow.Event{Kind: eventReady, Time: time.Now(),
					Message: fmt.Sprintf("the store answers, after %v: following", time.Since(since).Round(time.Second))})
			}
			return s, nil
		case ctx.Err() != nil:
			return nil, nil // SIGTERM or SIGINT: nothing was followed yet
		case once || !storeUnavailable(err):
			return nil, err
		case since.IsZero():
			since = time.Now()
			out.event(follow.Event{Kind: eventWaiting, Time: since, Message: fmt.Sprintf(
				"%v: waiting for the store, trying again every %v at most; following starts when it answers (Pi's files keep what it writes meanwhile)",
				err, followRetryMax)})
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		delay = min(2*delay, followRetryMax)
	}
}

// storeUnavailable reports whether err, from opening a store, says that it
// could not answer now (bucket.ErrUnavailable, or a network error) rather
// than that it refused: a missing bucket, refused credentials or a bad URL
// are not waited for.
func storeUnavailable(err error) bool {
	var usage *cmdcli.UsageError
	var nerr net.Error
	switch {
	case errors.Is(err, bucket.ErrNotFound), errors.Is(err, bucket.ErrAccessDenied), errors.As(err, &usage):
		return false
	case errors.Is(err, bucket.ErrUnavailable), errors.As(err, &nerr), errors.Is(err, syscall.ECONNREFUSED):
		return true
	}
	return false
}

// serveFollowMetrics serves the collectors (and the process's and the Go
// runtime's) on addr/metrics until stop is called; addr "" serves nothing.
func serveFollowMetrics(addr string, cs ...prometheus.Collector) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("follow: --metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// followOutput prints follow's events: with --json every event as a JSON
// object on stdout; otherwise warnings on stderr and, when stderr is a
// terminal, a line per upload.
type followOutput struct {
	env      *cliEnv
	json     bool
	progress bool
}

func (o *followOutput) event(ev follow.Event) {
	if o.json {
		_ = writeJSON(o.env.stdout, followEventOf(ev))
		return
	}
	switch {
	case ev.Kind == follow.EventUploaded && o.progress && ev.Entries > 0:
		fmt.Fprintf(o.env.stderr, "%s  %s  +%s (%s)  %s\n", ev.Time.Format("15:04:05"), cmdcli.Escape(ev.Session.String()),
			cmdcli.Count(ev.Entries, "entry"), cmdcli.Count(int(ev.Bytes), "byte"), cmdcli.Escape(ev.File))
	case ev.Kind == follow.EventUploaded:
	case ev.File == "":
		fmt.Fprintf(o.env.stderr, "follow: %s: %s\n", ev.Kind, cmdcli.Escape(ev.Message))
	default:
		fmt.Fprintf(o.env.stderr, "follow: %s: %s: %s\n", ev.Kind, cmdcli.Escape(ev.File), cmdcli.Escape(ev.Message))
	}
}

// followEventOf is ev as follow --json prints it.
func followEventOf(ev follow.Event) followEvent {
	j := followEvent{Event: string(ev.Kind), Time: ev.Time.UTC().Format(time.RFC3339Nano), File: ev.File,
		Lines: ev.Lines, Entries: ev.Entries, Stored: ev.Stored, Bytes: ev.Bytes, Offset: ev.Offset, Message: ev.Message}
	if ev.Session.SessionID != "" {
		j.Session = ev.Session.String()
	}
	return j
}

// summary prints the closing summary: a line on stdout, or with --json the
// "summary" event.
func (o *followOutput) summary(root string, st follow.Status, pending int) error {
	if o.json {
		return writeJSON(o.env.stdout, followEvent{Event: "summary", Time: time.Now().UTC().Format(time.RFC3339Nano),
			Following: st.Following, Lines: int(st.Lines), Entries: int(st.Entries), Stored: int(st.Stored),
			Segments: int(st.Segments), Bytes: int64(st.Bytes), Stuck: len(st.Stuck), Pending: pending, LagBytes: st.LagBytes})
	}
	for _, s := range st.Stuck {
		fmt.Fprintf(o.env.stderr, "follow: stuck: %s: %s\n", cmdcli.Escape(s.File), cmdcli.Escape(s.Reason))
	}
	_, err := fmt.Fprintf(o.env.stdout, "followed %s under %s: %s in %s uploaded (%s), %s recognised as stored; %d stuck; %s left in the outbox\n",
		cmdcli.Count(st.Following, "session file"), cmdcli.Escape(root), cmdcli.Count(int(st.Entries), "entry"),
		cmdcli.Count(int(st.Segments), "segment"), cmdcli.Count(int(st.Bytes), "byte"), cmdcli.Count(int(st.Stored), "line"),
		len(st.Stuck), cmdcli.Count(pending, "segment"))
	return err
}
