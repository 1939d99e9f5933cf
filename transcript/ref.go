package transcript

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultNamespace is the namespace of a TranscriptRef whose Namespace is empty.
const DefaultNamespace = "default"

// MaxRefPartLen is the longest namespace, agent id or session id accepted, in bytes.
const MaxRefPartLen = 128

// ErrInvalidRef is wrapped by every validation error of a TranscriptRef or writer id.
var ErrInvalidRef = errors.New("invalid transcript reference")

// TranscriptRef names one session of one agent in one namespace (tenant or user).
// Each part becomes one element of an object key, so each is validated: non-empty,
// at most MaxRefPartLen bytes of valid UTF-8, and free of "/", "\", control
// characters, "..", and the name ".".
type TranscriptRef struct {
	// Namespace is the owner's namespace; empty means DefaultNamespace.
	Namespace string
	// AgentID names the agent.
	AgentID string
	// SessionID names the session.
	SessionID string
}

// String returns "namespace/agent/session".
func (r TranscriptRef) String() string {
	return r.Norm().Namespace + "/" + r.AgentID + "/" + r.SessionID
}

// Norm returns r with an empty Namespace replaced by DefaultNamespace.
func (r TranscriptRef) Norm() TranscriptRef {
	if r.Namespace == "" {
		r.Namespace = DefaultNamespace
	}
	return r
}

// Validate reports the first invalid part of r, as an error wrapping ErrInvalidRef.
func (r TranscriptRef) Validate() error {
	r = r.Norm()
	for _, p := range []struct{ name, v string }{
		{"namespace", r.Namespace}, {"agent id", r.AgentID}, {"session id", r.SessionID},
	} {
		if err := ValidatePart(p.name, p.v); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePart checks one key element (a namespace, agent id or session id) by the
// rules of TranscriptRef; name says which part it is in the error.
func ValidatePart(name, v string) error {
	switch {
	case v == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidRef, name)
	case len(v) > MaxRefPartLen:
		return fmt.Errorf("%w: %s is %d bytes, over %d", ErrInvalidRef, name, len(v), MaxRefPartLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidRef, name)
	case v == ".":
		return fmt.Errorf("%w: %s %q is a relative path name", ErrInvalidRef, name, v)
	case strings.Contains(v, ".."):
		return fmt.Errorf("%w: %s %q contains \"..\"", ErrInvalidRef, name, v)
	}
	for _, c := range v {
		if c == '/' || c == '\\' || unicode.IsControl(c) {
			return fmt.Errorf("%w: %s %q contains %q", ErrInvalidRef, name, v, c)
		}
	}
	return nil
}
