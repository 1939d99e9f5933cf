package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// defaultStoreURL is the store used without --store and $TRANSCRIPT_STORE: a
// directory beside the caller, laid out like a bucket.
const defaultStoreURL = "file://./transcripts"

// storeFlags are the global flags: which store, which namespace, which agent and
// session, and whether to print JSON.
type storeFlags struct {
	url       string
	namespace string
	agent     string
	session   string
	json      bool
}

// newFlagSet returns a flag set whose usage prints usage (ending in examples) to stderr.
func newFlagSet(env *cliEnv, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "%s\nFlags:\n", strings.TrimSpace(usage))
		fs.PrintDefaults()
	}
	return fs
}

// newStoreFlagSet returns a flag set (see newFlagSet) with the global flags
// registered on it; --json only when withJSON (the command prints a listing or a
// summary).
func newStoreFlagSet(env *cliEnv, name, usage string, withJSON bool) (*flag.FlagSet, *storeFlags) {
	fs := newFlagSet(env, name, usage)
	var sf storeFlags
	def := env.getenv("TRANSCRIPT_STORE")
	if def == "" {
		def = defaultStoreURL
	}
	fs.StringVar(&sf.url, "store", def, "store URL (env TRANSCRIPT_STORE)")
	fs.StringVar(&sf.namespace, "ns", transcript.DefaultNamespace, "namespace (tenant or user)")
	fs.StringVar(&sf.agent, "agent", "", "agent id")
	fs.StringVar(&sf.session, "session", "", "session id")
	if withJSON {
		fs.BoolVar(&sf.json, "json", false, "print the result as JSON")
	}
	return fs, &sf
}

// parse parses args, mapping -h to errHelp, bad flags to a usage error, and
// checks the namespace, agent and session flags.
func parse(fs *flag.FlagSet, sf *storeFlags, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if sf == nil {
		return nil
	}
	for _, p := range []struct{ flag, v string }{{"ns", sf.namespace}, {"agent", sf.agent}, {"session", sf.session}} {
		if p.v == "" && p.flag != "ns" {
			continue
		}
		if err := transcript.ValidatePart(p.flag, p.v); err != nil {
			return usagef("%s: --%s %q: %v", fs.Name(), p.flag, p.v, err)
		}
	}
	return nil
}

// noArgs is a usage error when fs has positional arguments.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() != 0 {
		return usagef("%s takes no arguments (flags go before file arguments): %q", fs.Name(), fs.Args())
	}
	return nil
}

// ref returns the session named by --ns, --agent and --session, which are required.
func (f *storeFlags) ref(cmd string) (transcript.TranscriptRef, error) {
	if f.agent == "" || f.session == "" {
		return transcript.TranscriptRef{}, usagef("%s needs --agent and --session", cmd)
	}
	return transcript.TranscriptRef{Namespace: f.namespace, AgentID: f.agent, SessionID: f.session}, nil
}

// openStore opens the store named by f.url, bound to f.namespace.
func (f *storeFlags) openStore(ctx context.Context) (*transcript.Store, error) {
	b, prefix, err := bucketurl.Open(ctx, f.url)
	if err != nil {
		return nil, err
	}
	return transcript.New(transcript.Config{Bucket: b, Prefix: prefix, Namespace: f.namespace})
}

// notFoundError says that what does not exist; it wraps transcript.ErrNotFound.
type notFoundError struct{ what string }

func (e *notFoundError) Error() string { return e.what + ": not found" }

// Unwrap returns transcript.ErrNotFound.
func (e *notFoundError) Unwrap() error { return transcript.ErrNotFound }

// errSessionNotFound is the error for a session that has no segments.
func errSessionNotFound(ref transcript.TranscriptRef) error {
	return &notFoundError{what: "session " + ref.Norm().String()}
}

// selectSessions lists the sessions of the namespace, narrowed to --agent and
// --session when given. A namespace, agent or session that holds nothing is an
// error wrapping transcript.ErrNotFound.
func (f *storeFlags) selectSessions(ctx context.Context, s *transcript.Store) ([]transcript.TranscriptRef, error) {
	nss, err := s.ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(nss, f.namespace) {
		known := "the store has no namespaces"
		if len(nss) > 0 {
			known = "the store has: " + strings.Join(nss, ", ")
		}
		return nil, fmt.Errorf("%w (%s)", &notFoundError{what: fmt.Sprintf("namespace %q", f.namespace)}, known)
	}
	agents := []string{f.agent}
	if f.agent == "" {
		if agents, err = s.ListAgents(ctx, f.namespace); err != nil {
			return nil, err
		}
	}
	var refs []transcript.TranscriptRef
	for _, agent := range agents {
		sessions, err := s.ListSessions(ctx, f.namespace, agent)
		if err != nil {
			return nil, err
		}
		for _, sid := range sessions {
			if f.session == "" || sid == f.session {
				refs = append(refs, transcript.TranscriptRef{Namespace: f.namespace, AgentID: agent, SessionID: sid})
			}
		}
	}
	if len(refs) == 0 {
		switch {
		case f.session != "" && f.agent != "":
			return nil, errSessionNotFound(transcript.TranscriptRef{Namespace: f.namespace, AgentID: f.agent, SessionID: f.session})
		case f.session != "":
			return nil, &notFoundError{what: fmt.Sprintf("session %q in namespace %q", f.session, f.namespace)}
		default:
			return nil, &notFoundError{what: fmt.Sprintf("agent %q in namespace %q", f.agent, f.namespace)}
		}
	}
	return refs, nil
}

// parseSelection parses args for a command over the selected sessions of a
// namespace: no positional arguments, --parallel (when not nil) at least 1, then
// check (when not nil) for the command's own flags. It opens the store and selects
// the sessions (see selectSessions); the caller closes the store.
func (f *storeFlags) parseSelection(ctx context.Context, fs *flag.FlagSet, args []string, parallel *int, check func() error) (*transcript.Store, []transcript.TranscriptRef, error) {
	if err := parse(fs, f, args); err != nil {
		return nil, nil, err
	}
	if err := noArgs(fs); err != nil {
		return nil, nil, err
	}
	if parallel != nil && *parallel < 1 {
		return nil, nil, usagef("%s: --parallel must be at least 1", fs.Name())
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, nil, err
		}
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	refs, err := f.selectSessions(ctx, s)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, refs, nil
}

// readSession reads and merges the session named by the flags; a session without
// segments is an error that says "not found".
func (f *storeFlags) readSession(ctx context.Context, cmd string) (*transcript.MergeResult, transcript.TranscriptRef, error) {
	ref, err := f.ref(cmd)
	if err != nil {
		return nil, ref, err
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return nil, ref, err
	}
	defer s.Close()
	res, err := s.ReadAll(ctx, ref)
	if errors.Is(err, transcript.ErrNotFound) {
		return nil, ref, errSessionNotFound(ref)
	}
	return res, ref.Norm(), err
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(cmdcli.EscapeJSON(data), '\n'))
	return err
}

// isTerminal reports whether w is a terminal (progress is drawn only then).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
