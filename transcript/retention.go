package transcript

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalidRetention is wrapped by the errors of Retention.Validate and ParseHold:
// a rule or hold that names no valid namespace, agent or session, a negative limit,
// or two rules for the same namespace and agent.
var ErrInvalidRetention = errors.New("invalid retention policy")

// AnyName, as the namespace, agent or session of a RetentionRule or a Hold, matches
// every name.
const AnyName = "*"

// RetentionPolicy says which sessions of one agent Retain deletes: those whose last
// update is older than MaxAge, and those beyond the KeepLast newest. A session
// either limit selects is deleted (after the delete delay, and only if nothing was
// written to it meanwhile); the zero policy deletes nothing.
//
// A session's last update is the newest LastModified, on the bucket's clock, of
// its segments of every level. A compacted segment is stored after its inputs, so
// compaction can make a session look younger than its entries (by up to the time
// between a write and the compaction that merges it), never older. Heads, marks
// and objects outside the key layout do not count.
type RetentionPolicy struct {
	// MaxAge, when positive, selects every session whose last update is more than
	// MaxAge ago on the bucket's clock.
	MaxAge time.Duration
	// KeepLast, when positive, keeps at most KeepLast sessions of each agent, the
	// newest, and selects the others. The newest are those last written: by the
	// newest, over a session's segments, of the earlier of its LastModified and
	// the time in its key (ties by last update, then session id), so that a
	// copy of the bucket, whose objects bear the time they were copied, ranks
	// as the original does. A compacted segment, whose times are the
	// compaction's, counts no later than the newest key time of its entries'
	// origins (read from its metadata frame, for the sessions whose newest
	// segment may be one), so that the sessions one run compacted do not
	// outrank those written since.
	KeepLast int
}

// IsZero reports whether p selects nothing.
func (p RetentionPolicy) IsZero() bool { return p.MaxAge <= 0 && p.KeepLast <= 0 }

// String describes p, for example "max-age 720h0m0s, keep-last 100" or "keep all".
func (p RetentionPolicy) String() string {
	var parts []string
	if p.MaxAge > 0 {
		parts = append(parts, "max-age "+p.MaxAge.String())
	}
	if p.KeepLast > 0 {
		parts = append(parts, fmt.Sprintf("keep-last %d", p.KeepLast))
	}
	if len(parts) == 0 {
		return "keep all"
	}
	return strings.Join(parts, ", ")
}

// RetentionRule applies a policy to the agents it matches. Namespace and Agent are
// names or AnyName ("" means AnyName). Where several rules match an agent, the
// most specific one applies alone: a named namespace counts more than a named
// agent, so the order is namespace and agent named, namespace named, agent named,
// neither. A rule with the zero policy keeps every session of the agents it is the
// most specific rule for: it exempts them from a broader rule.
type RetentionRule struct {
	Namespace string
	Agent     string
	Policy    RetentionPolicy
}

// specificity ranks the rule among the rules matching one agent.
func (r RetentionRule) specificity() int {
	n := 0
	if !isAny(r.Namespace) {
		n += 2
	}
	if !isAny(r.Agent) {
		n++
	}
	return n
}

// matches reports whether the rule applies to agent of namespace (normalised).
func (r RetentionRule) matches(namespace, agent string) bool {
	return matchName(anyIfEmpty(r.Namespace), namespace) && matchName(anyIfEmpty(r.Agent), agent)
}

// Hold names sessions Retain never deletes, whatever a policy says: one session, or
// with AnyName as an element, every session of an agent, of a namespace, or every
// agent's sessions of that id.
type Hold struct {
	Namespace, Agent, Session string
}

// ParseHold parses "namespace/agent/session", where an element may be AnyName.
func ParseHold(s string) (Hold, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return Hold{}, fmt.Errorf("%w: hold %q: want namespace/agent/session (an element may be %q)", ErrInvalidRetention, s, AnyName)
	}
	h := Hold{Namespace: parts[0], Agent: parts[1], Session: parts[2]}
	return h, h.validate()
}

// String returns "namespace/agent/session".
func (h Hold) String() string { return h.Namespace + "/" + h.Agent + "/" + h.Session }

// Holds reports whether h names ref.
func (h Hold) Holds(ref TranscriptRef) bool {
	ref = ref.Norm()
	return matchName(h.Namespace, ref.Namespace) && matchName(h.Agent, ref.AgentID) && matchName(h.Session, ref.SessionID)
}

func (h Hold) validate() error {
	for _, p := range []struct{ name, v string }{{"namespace", h.Namespace}, {"agent id", h.Agent}, {"session id", h.Session}} {
		if p.v == AnyName {
			continue
		}
		if err := ValidatePart(p.name, p.v); err != nil {
			return fmt.Errorf("%w: hold %s: %w", ErrInvalidRetention, h, err)
		}
	}
	return nil
}

// Retention is what Retain applies: rules by namespace and agent, and holds, which
// win over every rule.
type Retention struct {
	Rules []RetentionRule
	Holds []Hold
}

// Validate reports the first invalid rule or hold: a name that is neither AnyName
// nor a valid id part (ValidatePart), a negative MaxAge or KeepLast, or a second
// rule for the same namespace and agent. The error wraps ErrInvalidRetention.
func (r *Retention) Validate() error {
	seen := map[[2]string]int{}
	for i, rule := range r.Rules {
		ns, agent := anyIfEmpty(rule.Namespace), anyIfEmpty(rule.Agent)
		for _, p := range []struct{ name, v string }{{"namespace", ns}, {"agent id", agent}} {
			if p.v != AnyName {
				if err := ValidatePart(p.name, p.v); err != nil {
					return fmt.Errorf("%w: rule %d: %w", ErrInvalidRetention, i+1, err)
				}
			}
		}
		switch {
		case rule.Policy.MaxAge < 0:
			return fmt.Errorf("%w: rule %d: max age %s is negative", ErrInvalidRetention, i+1, rule.Policy.MaxAge)
		case rule.Policy.KeepLast < 0:
			return fmt.Errorf("%w: rule %d: keep-last %d is negative", ErrInvalidRetention, i+1, rule.Policy.KeepLast)
		}
		key := [2]string{ns, agent}
		if j, ok := seen[key]; ok {
			return fmt.Errorf("%w: rules %d and %d are both for namespace %q, agent %q", ErrInvalidRetention, j, i+1, ns, agent)
		}
		seen[key] = i + 1
	}
	for _, h := range r.Holds {
		if err := h.validate(); err != nil {
			return err
		}
	}
	return nil
}

// PolicyFor returns the policy of the most specific rule matching agent of
// namespace ("" is the default namespace), and whether a rule matches.
func (r *Retention) PolicyFor(namespace, agent string) (RetentionPolicy, bool) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	best := -1
	var p RetentionPolicy
	for _, rule := range r.Rules {
		if sp := rule.specificity(); rule.matches(namespace, agent) && sp > best {
			best, p = sp, rule.Policy
		}
	}
	return p, best >= 0
}

// Held reports whether a hold names ref.
func (r *Retention) Held(ref TranscriptRef) bool {
	for _, h := range r.Holds {
		if h.Holds(ref) {
			return true
		}
	}
	return false
}

func isAny(pattern string) bool { return pattern == "" || pattern == AnyName }

func anyIfEmpty(pattern string) string {
	if pattern == "" {
		return AnyName
	}
	return pattern
}

// matchName reports whether pattern (a name, or AnyName) matches name.
func matchName(pattern, name string) bool { return pattern == AnyName || pattern == name }
