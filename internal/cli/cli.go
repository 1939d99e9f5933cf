// Package cli is the command layer the project's four binaries (transcript,
// transcript-compact, transcript-serve, transcript-bench) share: the store flags
// and TRANSCRIPT_STORE, GNU-style flag parsing (pflag) with suggestions for
// mistyped flags and commands, --help and --version on every command, opening a
// store without creating anything for a command that only reads, what "not found"
// means, and one mapping from errors to exit codes:
//
//	0  success, or help or the version shown (on stdout)
//	1  failure, or problems found (a missing store, namespace or session says "not found")
//	2  usage error (bad flag, bad value, bad store URL, unknown command)
//
// Results, help and the version go to stdout; errors, progress and diagnostics to
// stderr.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/transcriptstore/transcript/transcript/bucket"
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

// ErrHelp reports that help or the version was asked for and shown (exit code 0).
var ErrHelp = pflag.ErrHelp

// ExitCode returns the exit code for err and prints what the user needs to stderr:
// the message of a failure, or of a usage error followed by "Run '<hint>' for usage.".
// A message holding a character a terminal would act on is printed escaped (Escape).
// A failure the bucket refused for the credentials (bucket.ErrAccessDenied) says
// where credentials come from.
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
		if errors.Is(err, bucket.ErrAccessDenied) {
			if os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_SECRET_ACCESS_KEY") == "" {
				fmt.Fprintln(stderr, NoCredentialsHint)
			} else {
				fmt.Fprintln(stderr, AccessDeniedHint)
			}
		}
		return 1
	}
}

// NoCredentialsHint follows an error the bucket refused when no credentials
// were set: the request went without any.
const NoCredentialsHint = "Hint: no credentials are set, so the store was asked without any: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (deploy/iam lists what each role may do)."

// AccessDeniedHint follows an error the bucket refused for the credentials.
const AccessDeniedHint = "Hint: the store refused these credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): check that they are right and that their policy allows this command (deploy/iam lists what each role may do)."

// NewFlagSet returns a flag set named name whose help (-h, --help) prints usage,
// trimmed, then "Flags:" and the flags, to stdout, and whose --version prints
// Version to stdout (Parse returns ErrHelp for both). Parse errors are returned,
// not printed: Parse turns them into short usage errors.
func NewFlagSet(name, usage string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.SortFlags = false
	fs.SetInterspersed(false) // flags precede file arguments
	fs.Bool(VersionFlag, false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "%s\n\nFlags:\n%s", strings.TrimSpace(usage), fs.FlagUsages())
	}
	return fs
}

// Parse parses args into fs. Help gives ErrHelp, and so does --version once it
// printed the version; a bad flag or value gives a UsageError of one line,
// prefixed with the flag set's name, that names the nearest known flag for a
// mistyped one ("unknown flag --sesion (did you mean --session?)"), also for a
// Go-style single-dash long flag such as -session.
func Parse(fs *pflag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil {
		if v, _ := fs.GetBool(VersionFlag); v {
			fmt.Fprintln(fs.Output(), Version())
			return ErrHelp
		}
		return nil
	}
	if errors.Is(err, pflag.ErrHelp) {
		return err
	}
	msg := err.Error()
	if name, ok := unknownFlag(msg, args); ok {
		msg = "unknown flag " + name
		var known []string
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				known = append(known, "--"+f.Name)
			}
		})
		if s := Suggest("--"+strings.TrimLeft(name, "-"), known); s != "" {
			msg += " (did you mean " + s + "?)"
		}
	}
	return Usagef("%s: %s", fs.Name(), msg)
}

// unknownFlag returns the flag a pflag "unknown flag" error is about, as the user
// typed it.
func unknownFlag(msg string, args []string) (string, bool) {
	if name, ok := strings.CutPrefix(msg, "unknown flag: "); ok {
		return name, true
	}
	// "unknown shorthand flag: 'e' in -session": the whole word is what was meant.
	if _, rest, ok := strings.Cut(msg, "unknown shorthand flag: "); ok {
		if _, word, ok := strings.Cut(rest, " in "); ok {
			return word, true
		}
	}
	return "", false
}

// Suggest returns the candidate nearest to word (at most a third of its letters
// apart, and at most 3), or "" when none is near.
func Suggest(word string, candidates []string) string {
	best, bestD := "", min(3, max(1, len(word)/3))+1
	for _, c := range candidates {
		if d := distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// NoArgs is a usage error when fs was given positional arguments.
func NoArgs(fs *pflag.FlagSet) error {
	if fs.NArg() != 0 {
		return Usagef("%s takes no arguments (flags go before file arguments): %q", fs.Name(), fs.Args())
	}
	return nil
}

// Count returns n and noun, in the plural unless n is 1: "1 session", "2 sessions".
func Count(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, Plural(n, noun))
}

// Plural returns noun for 1 and its plural for any other count: noun+"s", or
// "ies" for a final consonant and "y" ("entry", "entries").
func Plural(n int, noun string) string {
	switch {
	case n == 1:
		return noun
	case len(noun) > 1 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	default:
		return noun + "s"
	}
}

// DefaultParallel is the default of --parallel in every command that works on
// several sessions at once.
const DefaultParallel = 8
