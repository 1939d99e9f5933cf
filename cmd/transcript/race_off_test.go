//go:build !race

package main

// raceEnabled reports whether the race detector is on (it changes what a run allocates).
const raceEnabled = false
