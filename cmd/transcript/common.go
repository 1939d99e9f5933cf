package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
)

// storeFlags are the global flags: which store, which namespace, which agent and
// session (see cmdcli.StoreFlags), and whether to print JSON.
type storeFlags struct {
	cmdcli.StoreFlags
	json bool
}

// newFlagSet returns a flag set whose help prints usage (ending in examples) and the
// flags to stdout (see cmdcli.NewFlagSet).
func newFlagSet(env *cliEnv, name, usage string) *pflag.FlagSet {
	return cmdcli.NewFlagSet(name, usage, env.stdout)
}

// newStoreFlagSet returns a flag set (see newFlagSet) with the global flags
// registered on it; --json only when withJSON (the command prints a listing or a
// summary).
func newStoreFlagSet(env *cliEnv, name, usage string, withJSON bool) (*pflag.FlagSet, *storeFlags) {
	fs := newFlagSet(env, name, usage)
	var sf storeFlags
	sf.Register(fs, env.getenv, transcript.DefaultNamespace, "namespace (tenant or user)")
	if withJSON {
		fs.BoolVar(&sf.json, "json", false, "print the result as JSON")
	}
	return fs, &sf
}

// parse parses args, mapping -h to errHelp, bad flags to a usage error, and
// checks the namespace, agent and session flags.
func parse(fs *pflag.FlagSet, sf *storeFlags, args []string) error {
	if err := cmdcli.Parse(fs, args); err != nil {
		return err
	}
	if sf == nil {
		return nil
	}
	if sf.Namespace == "" {
		return usagef("%s: --ns must not be empty", fs.Name())
	}
	return sf.Validate(fs.Name())
}

// noArgs is a usage error when fs has positional arguments.
func noArgs(fs *pflag.FlagSet) error { return cmdcli.NoArgs(fs) }

// ref returns the session named by --ns, --agent and --session, which are required.
func (f *storeFlags) ref(cmd string) (transcript.TranscriptRef, error) {
	if f.Agent == "" || f.Session == "" {
		return transcript.TranscriptRef{}, usagef("%s needs --agent and --session", cmd)
	}
	return transcript.TranscriptRef{Namespace: f.Namespace, AgentID: f.Agent, SessionID: f.Session}, nil
}

// openStore opens the store named by --store, bound to --ns, for a command that
// only reads: it creates nothing, and a missing directory store is "not found".
func (f *storeFlags) openStore(ctx context.Context) (*transcript.Store, error) {
	return cmdcli.OpenStore(ctx, f.URL, f.Namespace, cmdcli.ReadOnly)
}

// openStoreToWrite opens the store like openStore, creating a directory store that
// does not exist yet.
func (f *storeFlags) openStoreToWrite(ctx context.Context) (*transcript.Store, error) {
	return cmdcli.OpenStore(ctx, f.URL, f.Namespace, cmdcli.ReadWrite)
}

// notFound returns the error for what, which does not exist (exit code 1).
func notFound(format string, args ...any) error {
	return &cmdcli.NotFoundError{What: fmt.Sprintf(format, args...)}
}

// errSessionNotFound is the error for a session that has no segments.
func errSessionNotFound(ref transcript.TranscriptRef) error {
	return notFound("session %s", ref.Norm())
}

// errNotASession marks a listed prefix that holds no session (see notASession).
var errNotASession = errors.New("not a session: the prefix holds only directory markers")

// notASession reports whether ref, which the selection listed (--session did not
// name it) and which turned out to have no segments, holds nothing but directory
// markers: the "folder" objects S3 consoles and tools create, which a delimited
// listing cannot tell from a session. The commands over many sessions leave such
// a prefix out instead of failing on it.
func (f *storeFlags) notASession(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef) bool {
	if f.Session != "" {
		return false
	}
	held, err := s.HoldsObjects(ctx, ref)
	return err == nil && !held
}

// selectSessions lists the sessions of the namespace, narrowed to --agent and
// --session when given. A namespace, agent or session that holds nothing is an
// error wrapping bucket.ErrNotFound, or a cmdcli.HiddenError when objects named
// like its key prefix hide its sessions (cmdcli.StoreFlags.EmptySelection).
func (f *storeFlags) selectSessions(ctx context.Context, s *transcript.Store) ([]transcript.TranscriptRef, error) {
	nss, err := s.ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(nss, f.Namespace) {
		all, err := cmdcli.OpenStore(ctx, f.URL, "", cmdcli.ReadOnly)
		if err != nil {
			return nil, err
		}
		defer all.Close()
		return nil, cmdcli.NamespaceNotFound(ctx, all, f.Namespace)
	}
	agents := []string{f.Agent}
	if f.Agent == "" {
		if agents, err = s.ListAgents(ctx, f.Namespace); err != nil {
			return nil, err
		}
	}
	var refs []transcript.TranscriptRef
	for _, agent := range agents {
		sessions, err := s.ListSessions(ctx, f.Namespace, agent)
		if err != nil {
			return nil, err
		}
		for _, sid := range sessions {
			if f.Session == "" || sid == f.Session {
				refs = append(refs, transcript.TranscriptRef{Namespace: f.Namespace, AgentID: agent, SessionID: sid})
			}
		}
	}
	if len(refs) == 0 {
		return nil, f.EmptySelection(ctx, s)
	}
	return refs, nil
}

// parseSelection parses args for a command over the selected sessions of a
// namespace: no positional arguments, --parallel (when not nil) at least 1, then
// check (when not nil) for the command's own flags. It opens the store and selects
// the sessions (see selectSessions); the caller closes the store.
func (f *storeFlags) parseSelection(ctx context.Context, fs *pflag.FlagSet, args []string, parallel *int, check func() error) (*transcript.Store, []transcript.TranscriptRef, error) {
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

// writeJSON writes v as one line of JSON (see cmdcli.WriteJSON).
func writeJSON(w io.Writer, v any) error { return cmdcli.WriteJSON(w, v) }

// isTerminal reports whether w is a terminal (progress is drawn only then).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
