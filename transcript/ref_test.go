package transcript_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

func TestTranscriptRef_Validate(t *testing.T) {
	tests := []struct {
		name string
		ref  transcript.TranscriptRef
		ok   bool
	}{
		{"plain", transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "6d4c2f18-9a3b"}, true},
		{"default namespace", transcript.TranscriptRef{AgentID: "a", SessionID: "s"}, true},
		{"unicode", transcript.TranscriptRef{AgentID: "agent-é", SessionID: "sess.1_x"}, true},
		{"empty agent", transcript.TranscriptRef{SessionID: "s"}, false},
		{"empty session", transcript.TranscriptRef{AgentID: "a"}, false},
		{"slash", transcript.TranscriptRef{AgentID: "a/b", SessionID: "s"}, false},
		{"backslash", transcript.TranscriptRef{AgentID: `a\b`, SessionID: "s"}, false},
		{"dotdot", transcript.TranscriptRef{AgentID: "..", SessionID: "s"}, false},
		{"dotdot inside", transcript.TranscriptRef{AgentID: "a", SessionID: "x..y"}, false},
		{"dot", transcript.TranscriptRef{AgentID: ".", SessionID: "s"}, false},
		{"newline", transcript.TranscriptRef{AgentID: "a", SessionID: "s\n"}, false},
		{"nul", transcript.TranscriptRef{Namespace: "n\x00", AgentID: "a", SessionID: "s"}, false},
		{"del", transcript.TranscriptRef{AgentID: "a\x7f", SessionID: "s"}, false},
		{"bad utf8", transcript.TranscriptRef{AgentID: "a\xff", SessionID: "s"}, false},
		{"too long", transcript.TranscriptRef{AgentID: strings.Repeat("a", transcript.MaxRefPartLen+1), SessionID: "s"}, false},
		{"max length", transcript.TranscriptRef{AgentID: strings.Repeat("a", transcript.MaxRefPartLen), SessionID: "s"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ref.Validate()
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, transcript.ErrInvalidRef)
		})
	}
}

func TestTranscriptRef_Norm(t *testing.T) {
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	require.Equal(t, "default", ref.Norm().Namespace)
	require.Equal(t, "default/a/s", ref.String())
}

func TestValidateWriterID(t *testing.T) {
	for _, id := range []string{"w", "host-1.abc_def", strings.Repeat("x", transcript.MaxWriterIDLen)} {
		require.NoError(t, transcript.ValidateWriterID(id), id)
	}
	for _, id := range []string{"", "a/b", "a b", "..", "é", strings.Repeat("x", transcript.MaxWriterIDLen+1)} {
		require.ErrorIs(t, transcript.ValidateWriterID(id), transcript.ErrInvalidRef, id)
	}
	w := transcript.NewRandomWriter()
	require.NoError(t, transcript.ValidateWriterID(w.ID()))
	require.Equal(t, uint64(1), w.Next())
	require.Equal(t, uint64(2), w.Next())
}
