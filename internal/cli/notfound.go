package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// NotFoundError says that something a command was asked for does not exist: a
// store, a namespace, an agent, a session, an outbox. It wraps
// bucket.ErrNotFound; the exit code is 1 in every binary.
type NotFoundError struct {
	// What names it, e.g. `namespace "acme"`.
	What string
	// Hint, if set, says what to do instead.
	Hint string
}

func (e *NotFoundError) Error() string {
	if e.Hint == "" {
		return e.What + ": not found"
	}
	return e.What + ": not found (" + e.Hint + ")"
}

// Unwrap returns bucket.ErrNotFound.
func (e *NotFoundError) Unwrap() error { return bucket.ErrNotFound }

// maxNamedNamespaces bounds the namespaces a "not found" hint names.
const maxNamedNamespaces = 5

// NamespaceNotFound is the error for namespace ns that the store does not hold.
// all is the store unbound to a namespace; its other namespaces are named (up to
// a few) so that the hint says which --ns to give. A store whose namespaces cannot
// be listed (a role limited to one namespace) gets no hint. When the bucket holds
// an object named like the namespace's key prefix, which hides the namespace from
// some servers' listings (MinIO), the error is a HiddenError naming it (one HEAD).
func NamespaceNotFound(ctx context.Context, all *transcript.Store, ns string) error {
	// An object named like the namespace's key prefix (an S3 tool's copy of a
	// file to prefix/acme) hides the whole namespace from MinIO's listings.
	if key := strings.TrimSuffix(NamespaceKeyPrefix(all, ns), "/"); key != "" {
		if _, err := all.Bucket().Stat(ctx, key); err == nil {
			return &HiddenError{What: fmt.Sprintf("namespace %q", ns), Objects: []string{key}}
		}
	}
	nf := &NotFoundError{What: fmt.Sprintf("namespace %q", ns)}
	nss, err := all.ListNamespaces(ctx)
	if err != nil {
		return nf
	}
	nss = slices.DeleteFunc(nss, func(n string) bool { return n == ns })
	switch {
	case len(nss) == 0:
		nf.Hint = "the store is empty"
	case len(nss) == 1:
		nf.Hint = fmt.Sprintf("the store has one other namespace: --ns %s", Escape(nss[0]))
	default:
		named := make([]string, 0, maxNamedNamespaces)
		for _, n := range nss[:min(len(nss), maxNamedNamespaces)] {
			named = append(named, Escape(n))
		}
		more := ""
		if len(nss) > maxNamedNamespaces {
			more = fmt.Sprintf(" and %d more", len(nss)-maxNamedNamespaces)
		}
		nf.Hint = fmt.Sprintf("the store has %d other namespaces: %s%s; choose one with --ns", len(nss), strings.Join(named, ", "), more)
	}
	return nf
}

// CheckSelection checks that what f selects exists in the store (unbound to a
// namespace): --ns when set, --agent in it, --session of that agent. The first
// that does not exist gives a NotFoundError; --agent or --session without --ns
// are looked for in every namespace. It reads listings only.
func (f *StoreFlags) CheckSelection(ctx context.Context, all *transcript.Store) error {
	namespaces := []string{f.Namespace}
	nss, err := all.ListNamespaces(ctx)
	if err != nil {
		return err
	}
	if f.Namespace == "" {
		namespaces = nss
	} else if !slices.Contains(nss, f.Namespace) {
		return NamespaceNotFound(ctx, all, f.Namespace)
	}
	if f.Agent == "" && f.Session == "" {
		return nil
	}
	for _, ns := range namespaces {
		agents, err := all.ListAgents(ctx, ns)
		if err != nil {
			return err
		}
		for _, agent := range agents {
			if f.Agent != "" && agent != f.Agent {
				continue
			}
			if f.Session == "" {
				return nil
			}
			sessions, err := all.ListSessions(ctx, ns, agent)
			if err != nil {
				return err
			}
			if slices.Contains(sessions, f.Session) {
				return nil
			}
		}
	}
	return f.EmptySelection(ctx, all)
}

// SelectionNotFound is the NotFoundError for the selection (the sessions of
// --ns, of --agent there, or the one --session) that no namespace searched
// holds: it names what was asked.
func (f *StoreFlags) SelectionNotFound() *NotFoundError {
	in := "any namespace"
	if f.Namespace != "" {
		in = fmt.Sprintf("namespace %q", f.Namespace)
	}
	switch {
	case f.Session != "" && f.Agent != "" && f.Namespace != "":
		ref := transcript.TranscriptRef{Namespace: f.Namespace, AgentID: f.Agent, SessionID: f.Session}
		return &NotFoundError{What: "session " + ref.Norm().String()}
	case f.Session != "" && f.Agent != "":
		return &NotFoundError{What: fmt.Sprintf("session %q of agent %q in %s", f.Session, f.Agent, in)}
	case f.Session != "":
		return &NotFoundError{What: fmt.Sprintf("session %q in %s", f.Session, in)}
	case f.Agent == "":
		return &NotFoundError{What: "sessions in " + in}
	default:
		return &NotFoundError{What: fmt.Sprintf("agent %q in %s", f.Agent, in)}
	}
}
