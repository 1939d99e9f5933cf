package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

func TestExitCode(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"success", nil, 0, ""},
		{"help", fmt.Errorf("x: %w", cli.ErrHelp), 0, ""},
		{"usage", cli.Usagef("bad --x %d", 3), 2, "Error: bad --x 3\nRun 'tool -h' for usage.\n"},
		{"wrapped usage", fmt.Errorf("parse: %w", cli.Usagef("bad")), 2, "Error: bad\nRun 'tool -h' for usage.\n"},
		{"problems", fmt.Errorf("verify: %w", cli.ErrProblems), 1, ""},
		{"failure", errors.New("disk full"), 1, "Error: disk full\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.Equal(t, tc.code, cli.ExitCode(tc.err, &buf, "tool -h"))
			require.Equal(t, tc.stderr, buf.String())
		})
	}
}

func TestSuggest(t *testing.T) {
	cases := []struct {
		word, want string
	}{
		{"lss", "ls"},
		{"--sesion", "--session"},
		{"restor", "restore"},
		{"frobnicate", ""},
		{"x", ""},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, cli.Suggest(tc.word, []string{"ls", "restore", "stats", "--session", "--store"}), tc.word)
	}
}

func TestSplitCommand(t *testing.T) {
	value, boolean := []string{"store", "agent"}, []string{"json"}
	cases := []struct {
		name    string
		args    []string
		cmd     string
		rest    []string
		wantErr string
	}{
		{"command first", []string{"ls", "--agent", "a"}, "ls", []string{"--agent", "a"}, ""},
		{"flags first", []string{"--agent", "a", "--json", "ls", "x"}, "ls", []string{"--agent", "a", "--json", "x"}, ""},
		{"flag=value", []string{"--store=mem://", "ls"}, "ls", []string{"--store=mem://"}, ""},
		{"no command", []string{"--json"}, "", []string{"--json"}, ""},
		{"missing value", []string{"--agent"}, "", nil, "needs a value"},
		{"unknown", []string{"--agnet", "a", "ls"}, "", nil, "did you mean --agent?"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd, rest, err := cli.SplitCommand(tc.args, value, boolean)
			if tc.wantErr != "" {
				var ue *cli.UsageError
				require.ErrorAs(t, err, &ue)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.cmd, cmd)
			require.Equal(t, tc.rest, rest)
		})
	}
}

func TestParse(t *testing.T) {
	fs := cli.NewFlagSet("x", "Usage: x", &bytes.Buffer{})
	var sf cli.StoreFlags
	sf.Register(fs, func(string) string { return "mem://" }, "default", "namespace")
	err := cli.Parse(fs, []string{"--sesion", "s"})
	require.EqualError(t, err, "x: unknown flag --sesion (did you mean --session?)")
	require.NoError(t, cli.Parse(fs, []string{"--agent", "a"}))
	require.Equal(t, cli.StoreFlags{URL: "mem://", Namespace: "default", Agent: "a"}, sf, "TRANSCRIPT_STORE sets the default store")
	require.ErrorIs(t, cli.Parse(fs, []string{"--help"}), cli.ErrHelp)
}

// TestExitCode_AccessDeniedHint: a refusal names the credentials that were
// set, or says that none were (the request went anonymous).
func TestExitCode_AccessDeniedHint(t *testing.T) {
	denied := fmt.Errorf("list: %w", bucket.ErrAccessDenied)
	cases := []struct {
		name, key, secret, hint string
	}{
		{"credentials set", "AKIA", "secret", cli.AccessDeniedHint},
		{"none set", "", "", cli.NoCredentialsHint},
		{"only the key", "AKIA", "", cli.AccessDeniedHint},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", tc.key)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			var buf bytes.Buffer
			require.Equal(t, 1, cli.ExitCode(denied, &buf, "tool -h"))
			require.Contains(t, buf.String(), "\n"+tc.hint+"\n")
		})
	}
}
