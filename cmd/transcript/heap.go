package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	"github.com/transcriptstore/transcript/transcript"
)

// How the commands that read whole sessions keep their peak memory near the
// session's size. A read holds the session's bytes and a few integers per entry,
// and then makes garbage (entries parsed again, output buffers) at several times
// that size; with the Go runtime's default pacing (GOGC=100) the heap grows to
// twice what was live at the last collection, and a collection that runs while
// the garbage is made counts part of it as live, so the peak of a command that
// reads one session of 100k entries (13 MiB of JSONL) was 4.6-5× the JSONL.
// These settings trade CPU (more collections) for that peak: each one leaves a
// GOGC or GOMEMLIMIT given in the environment alone, and only ever tightens.

// oneSessionGCPercent is the GOGC of a command that reads one session whole
// (export, context, cat, and restore or verify of one session): the heap grows
// by a quarter of what is live before the collector runs. For the 100k-entry
// session above it cuts the peak RSS by about a quarter, for some 20% more CPU
// (the figures are in the commit that set it); a command over many sessions keeps
// the default, as its sessions are small or bounded by boundHeap.
const oneSessionGCPercent = 25

// readGCPercent is the GOGC of a one-session command while it reads the session
// (tightenForRead). A compacted segment's metadata (its entry index and the
// entries' origins, some 32 bytes an entry) is decoded into structures that live
// until the read merges them, beside the session's bytes, and at GOGC 25 the
// heap's growth on top of that took a compacted session of 100k entries over the
// memory goal (3× its JSONL plus the binary's idle RSS) by up to 4%, and one of
// 1M entries to 3.2× its JSONL (BENCHMARKS.md, "Item 12 on compacted sessions").
// The read is a small part of a command's CPU, so collecting more often during it
// costs little; the rest of the command keeps oneSessionGCPercent.
const readGCPercent = 10

// tightenForRead runs the collector at readGCPercent while a one-session command
// (one that set oneSessionGCPercent) reads its session, and returns the function
// that puts the command's setting back once the read is done. Commands over many
// sessions, and a GOGC given in the environment, are left alone (but for a verify
// of many sessions that tightenForStored set to oneSessionGCPercent: its reads
// then run at readGCPercent too, which changes only how often it collects).
func tightenForRead() (done func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(readGCPercent)
	if prev != oneSessionGCPercent {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() { debug.SetGCPercent(prev) }
}

// tightenGC sets GOGC to percent for the rest of the command, unless GOGC is set
// in the environment or the current setting is lower.
func tightenGC(percent int) {
	if os.Getenv("GOGC") != "" {
		return
	}
	if prev := debug.SetGCPercent(percent); prev >= 0 && prev < percent {
		debug.SetGCPercent(prev)
	}
}

// tightenForStored runs the collector at GOGC 25 (tightenGC) once verify meets a
// session of more than 8 MiB stored (some 30 MiB of JSONL and up): verify holds
// every segment it read until the session is checked, and with the default
// growth the heap peaks at twice that, more than 3× the session (GOGC 50 still
// peaked at 3.01× for 1M entries).
func tightenForStored(segs []transcript.SegmentInfo) {
	var stored int64
	for _, in := range segs {
		stored += in.Size
	}
	if stored >= 8<<20 {
		tightenGC(25)
	}
}

// boundHeap sets a soft memory limit (debug.SetMemoryLimit) for the rest of a
// command that now holds a session of size bytes of JSONL: the live heap plus
// half the session size. What the command allocates from here on is garbage
// (parsed entries, output buffers); without a limit the Go runtime lets it grow
// to the size of the live heap again before collecting (GOGC=100), which would
// double the peak. Sessions under 64 MiB are left alone (their garbage is small
// next to the runtime's own), a limit set by GOMEMLIMIT is kept, and a limit is
// only ever raised, so that sessions restored in parallel do not lower it under
// one another.
func boundHeap(size int64) {
	if size < 64<<20 || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	runtime.GC() // the live heap as of now, not as of the last collection
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	limit := int64(sample[0].Value.Uint64()) + size/2
	if prev := debug.SetMemoryLimit(-1); prev != math.MaxInt64 && prev > limit {
		return
	}
	debug.SetMemoryLimit(limit)
}
