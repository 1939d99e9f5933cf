package repository

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// MaxOwnerPartLen is the longest tenant or user accepted, in bytes.
const MaxOwnerPartLen = 60

// namespaceSep separates the escaped tenant and user in a namespace. escapeOwnerPart
// always escapes it, so it occurs exactly once.
const namespaceSep = '~'

// Owner is the trusted identity a Repository is bound to: a tenant and a user,
// as the runtime authenticated them. Every session belongs to exactly one owner.
type Owner struct {
	Tenant string
	User   string
}

// OwnerOf returns the owner of a SessionTree Identity: its namespace is the tenant
// and its user id the user.
func OwnerOf(who sessiontree.Identity) Owner {
	return Owner{Tenant: who.Namespace, User: who.UserID}
}

// Validate checks that tenant and user are each 1 to MaxOwnerPartLen bytes of valid
// UTF-8 without control characters. Errors wrap ErrInvalid.
func (o Owner) Validate() error {
	for _, p := range []struct{ name, v string }{{"tenant", o.Tenant}, {"user", o.User}} {
		switch {
		case p.v == "":
			return fmt.Errorf("%w: owner %s is empty", ErrInvalid, p.name)
		case len(p.v) > MaxOwnerPartLen:
			return fmt.Errorf("%w: owner %s is %d bytes, over %d", ErrInvalid, p.name, len(p.v), MaxOwnerPartLen)
		case !utf8.ValidString(p.v):
			return fmt.Errorf("%w: owner %s is not valid UTF-8", ErrInvalid, p.name)
		case strings.IndexFunc(p.v, unicode.IsControl) >= 0:
			return fmt.Errorf("%w: owner %s has a control character", ErrInvalid, p.name)
		}
	}
	return nil
}

// Namespace returns the transcript namespace of the owner's sessions:
//
//	escape(tenant) + "~" + escape(user)
//
// escape keeps ASCII letters, digits, '-', '_', '@' and '.', except a '.' that starts
// the part, follows another '.' or starts a final ".log" (transcript.ReservedSuffix),
// and writes every other byte as %XX (uppercase
// hex of the UTF-8 bytes). Because '%' and '~' are always escaped, the namespace
// decodes back to exactly one (tenant, user): two owners never share a namespace,
// and no escaped part contains "/", "..", or starts with "." (so it is a valid key
// element on every backend). Example: {"acme", "alice@acme.com"} is
// "acme~alice@acme.com"; {"a~b", "c"} is "a%7Eb~c". Case is kept, so owners that
// differ only in case must not share a case-insensitive file system.
func (o Owner) Namespace() (string, error) {
	if err := o.Validate(); err != nil {
		return "", err
	}
	ns := escapeOwnerPart(o.Tenant) + string(namespaceSep) + escapeOwnerPart(o.User)
	if err := transcript.ValidatePart("namespace", ns); err != nil {
		return "", fmt.Errorf("%w: owner: %w", ErrInvalid, err)
	}
	return ns, nil
}

// Identity returns the SessionTree Identity whose namespace is the owner's, so
// that a SessionTree of a repository session writes where the repository reads.
func (o Owner) Identity() (sessiontree.Identity, error) {
	ns, err := o.Namespace()
	if err != nil {
		return sessiontree.Identity{}, err
	}
	return sessiontree.Identity{Namespace: ns, UserID: o.User}, nil
}

// escapeOwnerPart is the escape of Owner.Namespace.
func escapeOwnerPart(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		keep := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '@' ||
			c == '.' && i > 0 && s[i-1] != '.' && s[i:] != transcript.ReservedSuffix
		if keep {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}
