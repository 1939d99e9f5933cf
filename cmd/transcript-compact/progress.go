package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// barProgress draws a progress bar of sessions on a terminal.
type barProgress struct {
	w    io.Writer
	desc string
	bar  *progressbar.ProgressBar
}

// logInterval is how often a run whose stderr is no terminal says how far it got.
const logInterval = time.Minute

// newProgress returns a progress bar described by desc on stderr when it is a
// terminal; on another file (a Kubernetes Job's log, cron's mail) a line every
// logInterval, free of control characters; else (a test's buffer) nothing.
func newProgress(stderr io.Writer, desc string) progress {
	f, ok := stderr.(*os.File)
	switch {
	case !ok:
		return noProgress{}
	case !isatty.IsTerminal(f.Fd()) && !isatty.IsCygwinTerminal(f.Fd()):
		return &logProgress{w: stderr, desc: desc, interval: logInterval}
	}
	return &barProgress{w: stderr, desc: desc}
}

// logProgress prints a line saying how many sessions are done every interval,
// from the first Total to Finish: a run shorter than interval prints nothing.
type logProgress struct {
	w        io.Writer
	desc     string
	interval time.Duration
	done     atomic.Int64
	total    atomic.Int64
	stop     chan struct{}
	stopped  sync.WaitGroup
}

// Total starts the lines (n < 0: the total is not known).
func (p *logProgress) Total(n int) {
	p.total.Store(int64(n))
	if p.stop != nil {
		return
	}
	p.stop = make(chan struct{})
	p.stopped.Add(1)
	start := time.Now()
	go func() {
		defer p.stopped.Done()
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				of := ""
				if total := p.total.Load(); total >= 0 {
					of = fmt.Sprintf("of %d ", total)
				}
				fmt.Fprintf(p.w, "progress: %s: %d %sdone after %s\n", p.desc, p.done.Load(), of, time.Since(start).Round(time.Second))
			}
		}
	}()
}

func (p *logProgress) Done() { p.done.Add(1) }

// Finish stops the lines; none is printed once it returns.
func (p *logProgress) Finish() {
	if p.stop != nil {
		close(p.stop)
		p.stopped.Wait()
		p.stop = nil
	}
}

func (p *barProgress) Total(n int) {
	p.bar = progressbar.NewOptions(n,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("sessions"),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *barProgress) Done() {
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

func (p *barProgress) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
