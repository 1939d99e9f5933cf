package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// defaultStoreURL is the embedded default store: a directory beside the caller.
const defaultStoreURL = "file://./transcript-data/bucket"

// defaultRoot is where local session files live by default.
const defaultRoot = "./transcript-data/local"

// storeFlags are the flags every store command shares.
type storeFlags struct {
	url       string
	namespace string
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

// newStoreFlagSet returns a flag set (see newFlagSet) with the store flags
// registered on it.
func newStoreFlagSet(env *cliEnv, name, usage string) (*flag.FlagSet, *storeFlags) {
	fs := newFlagSet(env, name, usage)
	var sf storeFlags
	sf.register(env, fs)
	return fs, &sf
}

func (f *storeFlags) register(env *cliEnv, fs *flag.FlagSet) {
	def := env.getenv("TRANSCRIPT_STORE")
	if def == "" {
		def = defaultStoreURL
	}
	fs.StringVar(&f.url, "store", def, "store URL (env TRANSCRIPT_STORE)")
	fs.StringVar(&f.namespace, "namespace", "", "namespace (tenant or user) the command is bound to; empty: all / default")
	fs.BoolVar(&f.json, "json", false, "print results as JSON")
}

// parse parses args, mapping -h to errHelp and bad flags to a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	return nil
}

// openStore opens the store named by f.url, bound to f.namespace if set.
func (f *storeFlags) openStore(ctx context.Context) (*transcript.Store, error) {
	b, prefix, err := bucketurl.Open(ctx, f.url)
	if err != nil {
		return nil, err
	}
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix, Namespace: f.namespace})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// parseRef parses "[namespace/]agent/session".
func parseRef(s, namespace string) (transcript.TranscriptRef, error) {
	parts := strings.Split(s, "/")
	var ref transcript.TranscriptRef
	switch len(parts) {
	case 2:
		ref = transcript.TranscriptRef{Namespace: namespace, AgentID: parts[0], SessionID: parts[1]}
	case 3:
		ref = transcript.TranscriptRef{Namespace: parts[0], AgentID: parts[1], SessionID: parts[2]}
		if namespace != "" && namespace != parts[0] {
			return ref, usagef("session %q is outside namespace %q", s, namespace)
		}
	default:
		return ref, usagef("session %q: want [namespace/]agent/session", s)
	}
	if err := ref.Validate(); err != nil {
		return ref, usagef("session %q: %v", s, err)
	}
	return ref.Norm(), nil
}

// parseRefs parses every argument with parseRef.
func parseRefs(args []string, namespace string) ([]transcript.TranscriptRef, error) {
	refs := make([]transcript.TranscriptRef, 0, len(args))
	for _, a := range args {
		ref, err := parseRef(a, namespace)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// openSessions parses the session arguments and opens the store; with no arguments
// the sessions are every session of the store (or of the bound namespace).
func (f *storeFlags) openSessions(ctx context.Context, args []string) (*transcript.Store, []transcript.TranscriptRef, error) {
	refs, err := parseRefs(args, f.namespace)
	if err != nil {
		return nil, nil, err
	}
	s, err := f.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(refs) == 0 {
		err = forEachSession(ctx, s, func(ref transcript.TranscriptRef) error {
			refs = append(refs, ref)
			return nil
		})
		if err != nil {
			s.Close()
			return nil, nil, err
		}
	}
	return s, refs, nil
}

// forEachSession calls fn for every session of the store (or of the bound namespace).
func forEachSession(ctx context.Context, s *transcript.Store, fn func(transcript.TranscriptRef) error) error {
	nss, err := s.ListNamespaces(ctx)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		agents, err := s.ListAgents(ctx, ns)
		if err != nil {
			return err
		}
		for _, agent := range agents {
			sessions, err := s.ListSessions(ctx, ns, agent)
			if err != nil {
				return err
			}
			for _, sid := range sessions {
				if err := fn(transcript.TranscriptRef{Namespace: ns, AgentID: agent, SessionID: sid}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
