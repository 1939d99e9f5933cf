// Package benchkit is what the bench command (cmd/transcript-bench) and the
// package benchmarks share: synthetic sessions and the paged API read. It
// imports no test support, so the bench binary links it; a benchmark and the
// bench item it stands for write the same sessions and read them the same way.
package benchkit
