package main

import (
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/internal/rusage"
)

// cpuMeter reads the CPU time a measured call costs: this process's (the store
// or the baseline, with the Go runtime's own work in it) and, when serverPID is
// set (--server-pid), the object store server's on this machine. On a machine
// where both share the cores, a wall-clock ratio says little about a call that
// is bound by the CPU the two spend together; these figures say where it goes.
type cpuMeter struct{ serverPID int }

// cpuReading is one reading of the meter; a field is valid when its has flag is set.
type cpuReading struct {
	self, server       time.Duration
	hasSelf, hasServer bool
}

func (m cpuMeter) read() cpuReading {
	var r cpuReading
	var err error
	r.self, err = rusage.SelfCPU()
	r.hasSelf = err == nil
	if m.serverPID > 0 {
		r.server, err = rusage.ProcessCPU(m.serverPID)
		r.hasServer = err == nil
	}
	return r
}

// cpuCost is the mean CPU time of one call of a measured function, in this
// process (Self) and in the server (Server, in steps of 10 ms per reading, so
// only its mean over many calls means anything). A field is valid when its
// has flag is set: every reading of it succeeded.
type cpuCost struct {
	Self, Server       time.Duration
	HasSelf, HasServer bool
	calls              int
}

// add counts one call measured between readings a and b.
func (c *cpuCost) add(a, b cpuReading) {
	if c.calls == 0 {
		c.HasSelf, c.HasServer = true, true
	}
	c.calls++
	c.Self += b.self - a.self
	c.Server += b.server - a.server
	c.HasSelf = c.HasSelf && a.hasSelf && b.hasSelf
	c.HasServer = c.HasServer && a.hasServer && b.hasServer
}

// mean returns c with its sums divided by the calls counted.
func (c cpuCost) mean() cpuCost {
	if c.calls > 0 {
		c.Self /= time.Duration(c.calls)
		c.Server /= time.Duration(c.calls)
	}
	return c
}

// cpuNote compares the CPU per call of a measured call (what) with that of its
// baseline (base), for a row's note: "" when this process's time could not be read.
func cpuNote(what string, c cpuCost, base string, b cpuCost) string {
	if !c.HasSelf || !b.HasSelf {
		return ""
	}
	if !c.HasServer || !b.HasServer {
		return fmt.Sprintf("; CPU per call in this process (mean; --server-pid adds the server's): %s %.3g ms, %s %.3g ms",
			what, ms(c.Self), base, ms(b.Self))
	}
	return fmt.Sprintf("; CPU per call (mean), this process + the server (--server-pid): %s %.3g + %.3g ms, %s %.3g + %.3g ms (%.3g× theirs in all)",
		what, ms(c.Self), ms(c.Server), base, ms(b.Self), ms(b.Server), ratio(ms(c.Self+c.Server), ms(b.Self+b.Server)))
}

// cpuAlso gives the CPU per call of one more baseline (what) measured beside
// the two of a cpuNote, for the same note: "" when this process's time could
// not be read.
func cpuAlso(what string, c cpuCost) string {
	switch {
	case !c.HasSelf:
		return ""
	case !c.HasServer:
		return fmt.Sprintf("; %s %.3g ms", what, ms(c.Self))
	}
	return fmt.Sprintf("; %s %.3g + %.3g ms", what, ms(c.Self), ms(c.Server))
}
