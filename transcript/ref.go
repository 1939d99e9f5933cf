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
// Each part becomes one element of an object key and one local file or directory
// name, so each is validated by ValidatePart.
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

// ValidatePart checks one id part (a namespace, agent id, session id, or writer id;
// see also ValidateWriterID); name says which part it is in the error. The rules are
// the same for every backend and every caller (library, commands, local layout), so
// an id that one backend accepts every other can hold under its own name, and a
// printed id never hides or forges anything on a terminal. An id part is:
//
//   - 1 to MaxRefPartLen bytes of valid UTF-8;
//   - free of "/", "\", "..", and of control, format and line-separator characters
//     (Unicode Cc, Cf, Zl, Zp: newlines, escape sequences, zero-width and
//     bidirectional-override characters);
//   - not a hidden name (starting with "."), which also excludes "." and the
//     directory backend's temp files (".tmp-");
//   - not ending in ".log" (ReservedSuffix): the local files of session x are
//     x.jsonl and x.log.jsonl, so session x.log would share a file with x;
//   - not a name of the key layout: "gc" (deletion marks), "L" followed by
//     digits (levels) and "payloads" (a namespace's payload objects), so that a
//     key pattern such as ".../L0/..." or ".../payloads/..." in an access policy
//     only ever matches that element of the layout.
func ValidatePart(name, v string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s %q %s", ErrInvalidRef, name, v, why)
	}
	switch {
	case v == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidRef, name)
	case len(v) > MaxRefPartLen:
		return fmt.Errorf("%w: %s is %d bytes, over %d", ErrInvalidRef, name, len(v), MaxRefPartLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidRef, name)
	case strings.HasPrefix(v, "."):
		return bad("starts with \".\" (hidden names are reserved)")
	case strings.Contains(v, ".."):
		return bad("contains \"..\"")
	case strings.HasSuffix(v, ReservedSuffix):
		return bad("ends in " + ReservedSuffix + " (reserved for local log files)")
	case IsLayoutName(v):
		return bad("is a name of the key layout (reserved)")
	}
	if i := forbiddenRune(v); i >= 0 {
		c, _ := utf8.DecodeRuneInString(v[i:])
		return bad(fmt.Sprintf("contains %U", c))
	}
	return nil
}

// forbiddenRune returns the offset of the first character of v (valid UTF-8)
// that an id part may not hold: "/", `\` or an unsafeRune; -1 if none. ASCII
// bytes are checked directly (its only such characters are "/", `\`, the C0
// controls and DEL), since every key a listing returns is validated this way and
// unicode.In was 5% of reading a session of small segments from memory.
func forbiddenRune(v string) int {
	for i := 0; i < len(v); {
		c := v[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(v[i:])
		if unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

// ReservedSuffix may not end an id part (see ValidatePart).
const ReservedSuffix = ".log"

// unsafeRune reports a control, format or line/paragraph-separator character.
func unsafeRune(c rune) bool {
	return unicode.In(c, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// IsLayoutName reports the element names of the key layout, which no id part may
// be: markDir, level elements ("L" and decimal digits) and payloadDir.
func IsLayoutName(v string) bool {
	return v == payloadDir || isLevelOrMark(v)
}

// isLevelOrMark reports the element names of the key layout below a session:
// markDir and level elements.
func isLevelOrMark(v string) bool {
	if v == markDir {
		return true
	}
	digits, ok := strings.CutPrefix(v, "L")
	return ok && digits != "" && strings.Trim(digits, "0123456789") == ""
}
