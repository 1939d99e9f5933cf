package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/cli"
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
