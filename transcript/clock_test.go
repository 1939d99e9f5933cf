package transcript_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

func TestClock_Next(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	other := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s2"}
	tests := []struct {
		name    string
		wall    time.Time
		observe time.Time // a key time seen for ref before Next
		want    time.Time
	}{
		{"nothing seen: the wall clock", t0, time.Time{}, t0},
		{"wall clock after what was seen", t0, t0.Add(-time.Hour), t0},
		{"wall clock equal to what was seen: one tick later", t0, t0, t0.Add(transcript.ClockTick)},
		{"wall clock an hour behind: one tick after what was seen", t0.Add(-time.Hour), t0, t0.Add(transcript.ClockTick)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := transcript.NewClock(func() time.Time { return tc.wall })
			if !tc.observe.IsZero() {
				c.Observe(ref, tc.observe)
			}
			require.Equal(t, tc.want, c.Next(ref))
			// Each Next is after the one before, whatever the wall clock says.
			require.Equal(t, tc.want.Add(transcript.ClockTick), c.Next(ref))
			// Another session has its own clock.
			require.Equal(t, tc.wall.Truncate(transcript.ClockTick), c.Next(other))
		})
	}
}
