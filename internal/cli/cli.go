// Package cli holds what the project's commands share about errors and exit codes:
// 0 success (or help shown), 1 failure or problems found, 2 usage error.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError marks a bad command line (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ErrProblems reports that a command ran but found problems, which it already
// printed (exit code 1, nothing more printed).
var ErrProblems = errors.New("problems found")

// ErrHelp reports that help was asked for and shown (exit code 0).
var ErrHelp = flag.ErrHelp

// ExitCode returns the exit code for err and prints what the user needs to stderr:
// the message of a failure, or of a usage error followed by "Run '<hint>' for usage.".
// A message holding a character a terminal would act on is printed escaped (Escape).
func ExitCode(err error, stderr io.Writer, hint string) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "Error: %s\nRun '%s' for usage.\n", Escape(ue.Msg), hint)
		return 2
	case errors.Is(err, ErrProblems):
		return 1
	default:
		fmt.Fprintf(stderr, "Error: %s\n", Escape(err.Error()))
		return 1
	}
}
