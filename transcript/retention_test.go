package transcript_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

const day = 24 * time.Hour

func TestRetention_Validate(t *testing.T) {
	tests := []struct {
		name string
		r    transcript.Retention
		err  string // "" for valid
	}{
		{"empty", transcript.Retention{}, ""},
		{"every kind", transcript.Retention{
			Rules: []transcript.RetentionRule{
				{Policy: transcript.RetentionPolicy{MaxAge: 30 * day}},
				{Namespace: "acme", Agent: "*", Policy: transcript.RetentionPolicy{KeepLast: 10}},
				{Namespace: "acme", Agent: "auditor"},
			},
			Holds: []transcript.Hold{{Namespace: "acme", Agent: "*", Session: "*"}},
		}, ""},
		{"negative age", transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{MaxAge: -time.Hour}}}},
			"rule 1: max age -1h0m0s is negative"},
		{"negative keep", transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{KeepLast: -1}}}},
			"rule 1: keep-last -1 is negative"},
		{"bad namespace", transcript.Retention{Rules: []transcript.RetentionRule{{}, {Namespace: "a/b"}}},
			`rule 2: invalid transcript reference: namespace "a/b" contains U+002F`},
		{"layout name agent", transcript.Retention{Rules: []transcript.RetentionRule{{Agent: "gc"}}},
			`rule 1: invalid transcript reference: agent id "gc" is a name of the key layout (reserved)`},
		{"duplicate, empty meaning any", transcript.Retention{Rules: []transcript.RetentionRule{{Namespace: "*"}, {Namespace: "", Agent: "*"}}},
			`rules 1 and 2 are both for namespace "*", agent "*"`},
		{"bad hold", transcript.Retention{Holds: []transcript.Hold{{Namespace: "acme", Agent: "", Session: "s"}}},
			"hold acme//s: invalid transcript reference: agent id is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, transcript.ErrInvalidRetention)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestRetention_PolicyFor(t *testing.T) {
	p := func(d int) transcript.RetentionPolicy {
		return transcript.RetentionPolicy{MaxAge: time.Duration(d) * day}
	}
	r := transcript.Retention{Rules: []transcript.RetentionRule{
		{Policy: p(90)},
		{Agent: "bot", Policy: p(7)},
		{Namespace: "acme", Policy: p(30)},
		{Namespace: "acme", Agent: "auditor"}, // keeps every session
		{Namespace: "default", Agent: "coder", Policy: p(1)},
	}}
	require.NoError(t, r.Validate())
	tests := []struct {
		ns, agent string
		want      transcript.RetentionPolicy
	}{
		{"other", "coder", p(90)},
		{"other", "bot", p(7)},
		{"acme", "bot", p(30)}, // a named namespace counts more than a named agent
		{"acme", "coder", p(30)},
		{"acme", "auditor", transcript.RetentionPolicy{}},
		{"", "coder", p(1)}, // "" is the default namespace
	}
	for _, tt := range tests {
		got, ok := r.PolicyFor(tt.ns, tt.agent)
		require.True(t, ok)
		require.Equal(t, tt.want, got, "%s/%s", tt.ns, tt.agent)
	}
	none := transcript.Retention{Rules: []transcript.RetentionRule{{Namespace: "acme", Policy: p(1)}}}
	got, ok := none.PolicyFor("other", "coder")
	require.False(t, ok)
	require.True(t, got.IsZero())
	require.Equal(t, "keep all", got.String())
	require.Equal(t, "max-age 720h0m0s, keep-last 3", transcript.RetentionPolicy{MaxAge: 30 * day, KeepLast: 3}.String())
}

func TestParseHold(t *testing.T) {
	tests := []struct {
		in      string
		want    transcript.Hold
		err     string
		matches []transcript.TranscriptRef
		misses  []transcript.TranscriptRef
	}{
		{in: "acme/coder/s1", want: transcript.Hold{Namespace: "acme", Agent: "coder", Session: "s1"},
			matches: []transcript.TranscriptRef{{Namespace: "acme", AgentID: "coder", SessionID: "s1"}},
			misses:  []transcript.TranscriptRef{{Namespace: "acme", AgentID: "coder", SessionID: "s2"}, {Namespace: "acme2", AgentID: "coder", SessionID: "s1"}}},
		{in: "acme/*/*", want: transcript.Hold{Namespace: "acme", Agent: "*", Session: "*"},
			matches: []transcript.TranscriptRef{{Namespace: "acme", AgentID: "a", SessionID: "b"}},
			misses:  []transcript.TranscriptRef{{Namespace: "other", AgentID: "a", SessionID: "b"}}},
		{in: "default/coder/*", want: transcript.Hold{Namespace: "default", Agent: "coder", Session: "*"},
			matches: []transcript.TranscriptRef{{AgentID: "coder", SessionID: "x"}}},
		{in: "acme/coder", err: `hold "acme/coder": want namespace/agent/session`},
		{in: "acme/coder/s1/x", err: "want namespace/agent/session"},
		{in: "acme/../s1", err: `agent id ".." starts with "."`},
		{in: "acme/coder/", err: "session id is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			h, err := transcript.ParseHold(tt.in)
			if tt.err != "" {
				require.ErrorIs(t, err, transcript.ErrInvalidRetention)
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, h)
			require.Equal(t, tt.in, h.String())
			r := transcript.Retention{Holds: []transcript.Hold{h}}
			for _, ref := range tt.matches {
				require.True(t, r.Held(ref), ref.String())
			}
			for _, ref := range tt.misses {
				require.False(t, r.Held(ref), ref.String())
			}
		})
	}
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		90 * time.Second:                      "1m30s",
		30 * day:                              "30d",
		41*day + 3*time.Hour:                  "41d3h",
		2*day + 23*time.Hour + 59*time.Minute: "3d", // rounds to the hour
	} {
		require.Equal(t, want, transcript.FormatAge(d))
	}
}

func TestRetentionAction_String(t *testing.T) {
	require.Equal(t, "late-write", transcript.RetentionLateWrite.String())
	require.Equal(t, "kept", transcript.RetentionKept.String())
	require.Equal(t, "RetentionAction(99)", transcript.RetentionAction(99).String())
}
