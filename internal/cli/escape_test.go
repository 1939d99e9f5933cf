package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/cli"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"e-1", "e-1"},
		{"café ✓", "café ✓"},
		{`a"b`, `a"b`},
		{"x\n0 problems", `"x\n0 problems"`},
		{"\x1b[2J", `"\x1b[2J"`},
		{"a\u200bb", `"a\u200bb"`},
		{"abc\u202egpj", `"abc\u202egpj"`},
		{"\u2028", `"\u2028"`},
		{"\u009b", `"\u009b"`},
		{"\xff", `"\xff"`},
		{`"quoted"`, `"\"quoted\""`},
		{"", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, cli.Escape(tt.in), "%q", tt.in)
	}
}

func TestEscapeJSON(t *testing.T) {
	for _, v := range []string{"plain", "a\u202eb", "zw\u200b", "tag\U000e0001", "nl\nesc\x1b"} {
		data, err := json.Marshal(map[string]string{"id": v})
		require.NoError(t, err)
		out := cli.EscapeJSON(data)
		require.Equal(t, cli.Escape(string(out)), string(out), "no raw unsafe rune in %q", out)
		var back map[string]string
		require.NoError(t, json.Unmarshal(out, &back))
		require.Equal(t, v, back["id"])
	}
}
