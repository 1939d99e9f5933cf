package transcript

import (
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestForbiddenRune_EveryRune holds forbiddenRune's ASCII shortcut to the rule
// it replaces ("/", `\` or unsafeRune) for every character of Unicode.
func TestForbiddenRune_EveryRune(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		want := -1
		if r == '/' || r == '\\' || unsafeRune(r) {
			want = 0
		}
		if got := forbiddenRune(string(r)); got != want {
			t.Fatalf("forbiddenRune(%U) = %d, want %d", r, got, want)
		}
	}
}

func TestForbiddenRune_Offset(t *testing.T) {
	tests := []struct {
		v    string
		want int
	}{
		{"", -1},
		{"session-01", -1},
		{"café", -1},
		{"日本語", -1},
		{"a/b", 1},
		{`a\b`, 1},
		{"ab\x7f", 2},
		{"\x00", 0},
		{"tab\there", 3},
		{"é\u202e", 2},          // after a two-byte character
		{"日\u200b", 3},          // zero-width space after a three-byte one
		{"a\u0085b", 1},         // NEL, a C1 control
		{"x\u2028", 1},          // line separator
		{"\U0001F600\u00ad", 4}, // soft hyphen after a four-byte emoji
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.v), func(t *testing.T) {
			require.Equal(t, tt.want, forbiddenRune(tt.v))
		})
	}
}

// BenchmarkValidate measures the check of a session's names, made for every key a
// listing returns.
func BenchmarkValidate(b *testing.B) {
	ref := TranscriptRef{Namespace: "prod", AgentID: "coder", SessionID: "2026-12-06T06-32-15-019a3f2e-7c1d-7a4b-9e3f-5d2c8b1a0f6e"}
	for b.Loop() {
		if err := ref.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
