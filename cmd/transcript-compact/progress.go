package main

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// barProgress draws a progress bar of sessions on a terminal.
type barProgress struct {
	w    io.Writer
	desc string
	bar  *progressbar.ProgressBar
}

// newProgress returns a progress bar described by desc on stderr when it is a
// terminal, else nothing: logs of a Kubernetes Job stay free of control characters.
func newProgress(stderr io.Writer, desc string) progress {
	f, ok := stderr.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return noProgress{}
	}
	return &barProgress{w: stderr, desc: desc}
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
