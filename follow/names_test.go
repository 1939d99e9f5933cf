package follow_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

func TestPartName(t *testing.T) {
	long := "--home-u-" + strings.Repeat("deep-", 30) + "proj--"
	tests := []struct {
		name, want string
	}{
		{"--home-u-proj--", "--home-u-proj--"},
		{"0195f0c1-5b6c-7d8e-9f00-112233445566", "0195f0c1-5b6c-7d8e-9f00-112233445566"},
		{"a%b", "a%25b"},
		{".hidden", "%2Ehidden"},
		{"a..b", "a.%2Eb"},
		{"a...b", "a.%2E.b"},
		{"x.log", "x%2Elog"},
		{"gc", "%67c"},
		{"L12", "%4C12"},
		{"Lx", "Lx"},
		{"tab\there", "tab%09here"},
		{"a/b\\c", "a%2Fb%5Cc"},
		{"bad\xffutf8", "bad%FFutf8"},
		{"zero\u200bwidth", "zero%E2%80%8Bwidth"},
		{long, long[:111] + "~"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := follow.PartName(tt.name)
			require.NoError(t, err)
			if strings.HasSuffix(tt.want, "~") {
				require.True(t, strings.HasPrefix(got, tt.want), got)
				require.Len(t, got, 128)
			} else {
				require.Equal(t, tt.want, got)
			}
			require.NoError(t, transcript.ValidatePart("id", got))
			if prev, ok := seen[got]; ok {
				t.Fatalf("%q and %q map to %q", prev, tt.name, got)
			}
			seen[got] = tt.name
		})
	}
	_, err := follow.PartName("")
	require.ErrorIs(t, err, transcript.ErrInvalidRef)
	a, _ := follow.PartName(long + "a")
	b, _ := follow.PartName(long + "b")
	require.NotEqual(t, a, b, "shortened names keep apart by their hash")
	// A shortened name does not cut an escape.
	esc, err := follow.PartName(strings.Repeat("a", 110) + "%" + strings.Repeat("b", 40))
	require.NoError(t, err)
	require.NoError(t, transcript.ValidatePart("id", esc))
	require.NotContains(t, esc, "%2~")
}

func TestDefaultRoot(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct{ env, want string }{
		{"", filepath.Join(home, ".pi", "agent", "sessions")},
		{"/opt/pi", "/opt/pi/sessions"},
		{"~/pi", filepath.Join(home, "pi", "sessions")},
		{"~", filepath.Join(home, "sessions")},
	}
	for _, tt := range tests {
		got, err := follow.DefaultRoot(func(k string) string {
			if k == "PI_CODING_AGENT_DIR" {
				return tt.env
			}
			return ""
		})
		require.NoError(t, err)
		require.Equal(t, tt.want, got, tt.env)
	}
}

// TestNameOfPart: every name PartName does not shorten is read back from its
// part; a part that holds a "%" starting no escape, or that PartName would
// not make of what it reads back as (an escape it would not write), is not.
func TestNameOfPart(t *testing.T) {
	for _, name := range []string{"--home-u-proj--", "a%b", "x.log", ".hidden", "a/b\\c", "gc", "tab\there", "\xff"} {
		part, err := follow.PartName(name)
		require.NoError(t, err)
		got, ok := follow.NameOfPart(part)
		require.True(t, ok, "%q -> %q", name, part)
		require.Equal(t, name, got)
	}
	for _, part := range []string{"a%", "a%4", "a%zz", "%61", "%2E%2E"} {
		_, ok := follow.NameOfPart(part)
		require.False(t, ok, part)
	}
}
