package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// gcPercent returns the current GOGC without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestTightenForRead: a one-session command (at oneSessionGCPercent) reads at
// readGCPercent and gets its setting back; any other setting, and a GOGC from
// the environment, is left as it is.
func TestTightenForRead(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name       string
		env        string
		before     int
		duringRead int
	}{
		{"one-session command", "", oneSessionGCPercent, readGCPercent},
		{"command over many sessions", "", 100, 100},
		{"already tighter", "", 5, 5},
		{"GOGC from the environment", "25", oneSessionGCPercent, oneSessionGCPercent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GOGC", tt.env)
			debug.SetGCPercent(tt.before)
			done := tightenForRead()
			require.Equal(t, tt.duringRead, gcPercent(), "during the read")
			done()
			require.Equal(t, tt.before, gcPercent(), "after the read")
		})
	}
}
