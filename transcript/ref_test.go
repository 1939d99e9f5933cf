package transcript_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
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
		// A session x.log would share the local file x.log.jsonl with session x.
		{"local log suffix", transcript.TranscriptRef{AgentID: "a", SessionID: "x.log"}, false},
		{"log inside", transcript.TranscriptRef{AgentID: "a", SessionID: "x.logs"}, true},
		// The directory backend hides its temp files; a hidden id would vanish in a copy.
		{"temp prefix", transcript.TranscriptRef{AgentID: "a", SessionID: ".tmp-y"}, false},
		{"hidden", transcript.TranscriptRef{Namespace: ".acme", AgentID: "a", SessionID: "s"}, false},
		{"escape sequence", transcript.TranscriptRef{AgentID: "a", SessionID: "s\x1b[2J"}, false},
		{"zero-width space", transcript.TranscriptRef{AgentID: "a\u200b", SessionID: "s"}, false},
		{"zero-width joiner", transcript.TranscriptRef{AgentID: "a", SessionID: "s\u200d"}, false},
		{"right-to-left override", transcript.TranscriptRef{AgentID: "a", SessionID: "s\u202egpj"}, false},
		{"byte order mark", transcript.TranscriptRef{AgentID: "\ufeffa", SessionID: "s"}, false},
		{"line separator", transcript.TranscriptRef{AgentID: "a", SessionID: "s\u2028"}, false},
		{"C1 control", transcript.TranscriptRef{AgentID: "a", SessionID: "s\u009b"}, false},
		{"mark directory", transcript.TranscriptRef{AgentID: "gc", SessionID: "s"}, false},
		{"level element", transcript.TranscriptRef{AgentID: "a", SessionID: "L0"}, false},
		{"level element 12", transcript.TranscriptRef{Namespace: "L12", AgentID: "a", SessionID: "s"}, false},
		{"L alone", transcript.TranscriptRef{AgentID: "L", SessionID: "L0x"}, true},
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
	for _, id := range []string{"", "a/b", "a b", "..", "é", ".w", "w.log", "L1", strings.Repeat("x", transcript.MaxWriterIDLen+1)} {
		require.ErrorIs(t, transcript.ValidateWriterID(id), transcript.ErrInvalidRef, id)
	}
	w := transcript.NewRandomWriter()
	require.NoError(t, transcript.ValidateWriterID(w.ID()))
	require.Equal(t, uint64(1), w.Next())
	require.Equal(t, uint64(2), w.Next())
}

// TestValidatePart_SameOnEveryBackend: an id the directory backend could not hold
// under its own name (its temp prefix) is refused by the one validation every
// backend and command uses, so what S3 accepts a directory copy can hold.
func TestValidatePart_SameOnEveryBackend(t *testing.T) {
	for _, v := range []string{filebucket.TempPrefix + "y", filebucket.TempPrefix, "x" + transcript.ReservedSuffix} {
		require.ErrorIs(t, transcript.ValidatePart("session id", v), transcript.ErrInvalidRef, v)
	}
}
