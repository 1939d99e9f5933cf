package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/transcriptstore/transcript/transcript"
)

// A retention policy file (--retention FILE, docs/RETENTION.md) is YAML:
//
//	rules:
//	  - namespace: acme     # default "*": every namespace
//	    agent: "*"          # default "*": every agent
//	    maxAge: 30d         # Go duration (720h, 90m) or whole days (30d)
//	    keepLast: 100       # at least 1
//	  - namespace: acme
//	    agent: auditor
//	    keepAll: true       # exempt from a broader rule
//	holds:
//	  - acme/coder/0199a0b1-7c1e-7000-8000-000000000001
//	  - acme/legal/*
//
// Every error names the file, the line and the field.

// ruleFields are the keys of a rule, in the order the errors list them.
var ruleFields = []string{"namespace", "agent", "maxAge", "keepLast", "keepAll"}

// readRetentionFile reads and parses the policy file at path.
func readRetentionFile(path string) (transcript.Retention, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return transcript.Retention{}, err
	}
	return parseRetentionFile(path, data)
}

// fileError is an error at a line of the policy file.
type fileError struct {
	file string
	line int
	msg  string
}

func (e *fileError) Error() string { return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg) }

// parseRetentionFile parses the policy file name holding data.
func parseRetentionFile(name string, data []byte) (transcript.Retention, error) {
	var r transcript.Retention
	errAt := func(n *yaml.Node, format string, args ...any) error {
		return &fileError{file: name, line: n.Line, msg: fmt.Sprintf(format, args...)}
	}
	yamlError := func(err error) error {
		return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, next yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return r, yamlError(err)
	}
	if len(doc.Content) == 0 {
		return r, fmt.Errorf("%s: empty: want rules and/or holds", name)
	}
	// A second document (two policies concatenated) would be ignored; an empty
	// one (a trailing "---") holds nothing.
	switch err := dec.Decode(&next); {
	case err == nil && len(next.Content) > 0 && next.Content[0].Tag != "!!null":
		return r, errAt(&next, "a second YAML document: want one policy in the file")
	case err != nil && !errors.Is(err, io.EOF):
		return r, yamlError(err)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return r, errAt(root, "want a mapping with the keys rules and holds")
	}
	if err := uniqueKeys(root, "", errAt); err != nil {
		return r, err
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		var err error
		switch key.Value {
		case "rules":
			r.Rules, err = parseRules(val, errAt)
		case "holds":
			r.Holds, err = parseHolds(val, errAt)
		default:
			err = errAt(key, "unknown key %q (want rules, holds)", key.Value)
		}
		if err != nil {
			return r, err
		}
	}
	if len(r.Rules) == 0 && len(r.Holds) == 0 {
		return r, errAt(root, "no rules and no holds")
	}
	return r, nil
}

type errAtFunc func(n *yaml.Node, format string, args ...any) error

// uniqueKeys reports a key the mapping n holds twice (YAML forbids it; the
// parser of nodes does not check), its message prefixed by where.
func uniqueKeys(n *yaml.Node, where string, errAt errAtFunc) error {
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if line, dup := first[key.Value]; dup {
			return errAt(key, "%skey %q given twice (first at line %d)", where, key.Value, line)
		}
		first[key.Value] = key.Line
	}
	return nil
}

// parseRules parses the sequence of rules n.
func parseRules(n *yaml.Node, errAt errAtFunc) ([]transcript.RetentionRule, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, "rules: want a list of rules")
	}
	seen := map[[2]string]int{}
	var rules []transcript.RetentionRule
	for i, rn := range n.Content {
		where := fmt.Sprintf("rules[%d]", i)
		rule, err := parseRule(rn, where, errAt)
		if err != nil {
			return nil, err
		}
		key := [2]string{rule.Namespace, rule.Agent}
		if line, dup := seen[key]; dup {
			return nil, errAt(rn, "%s: a second rule for namespace %q, agent %q (the first is at line %d)", where, rule.Namespace, rule.Agent, line)
		}
		seen[key] = rn.Line
		rules = append(rules, rule)
	}
	return rules, nil
}

// parseRule parses one rule, at where ("rules[i]").
func parseRule(n *yaml.Node, where string, errAt errAtFunc) (transcript.RetentionRule, error) {
	rule := transcript.RetentionRule{Namespace: transcript.AnyName, Agent: transcript.AnyName}
	if n.Kind != yaml.MappingNode {
		return rule, errAt(n, "%s: want a mapping with the keys %s", where, strings.Join(ruleFields, ", "))
	}
	if err := uniqueKeys(n, where+": ", errAt); err != nil {
		return rule, err
	}
	keepAll := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		field := where + "." + key.Value
		if val.Kind != yaml.ScalarNode {
			return rule, errAt(val, "%s: want a single value", field)
		}
		if val.Tag == "!!null" {
			hint := ""
			if key.Value == "namespace" || key.Value == "agent" {
				hint = ` (leave the field out for "*")`
			}
			return rule, errAt(val, "%s: null: want a value%s", field, hint)
		}
		var err error
		switch key.Value {
		case "namespace":
			rule.Namespace, err = parseName("namespace", val.Value)
		case "agent":
			rule.Agent, err = parseName("agent id", val.Value)
		case "maxAge":
			rule.Policy.MaxAge, err = parseAge(val.Value)
		case "keepLast":
			rule.Policy.KeepLast, err = parseKeepLast(val.Value)
		case "keepAll":
			keepAll, err = strconv.ParseBool(val.Value)
			if err != nil {
				err = fmt.Errorf("%q: want true or false", val.Value)
			}
		default:
			return rule, errAt(key, "%s: unknown field %q (want %s)", where, key.Value, strings.Join(ruleFields, ", "))
		}
		if err != nil {
			return rule, errAt(val, "%s: %v", field, err)
		}
	}
	switch {
	case keepAll && !rule.Policy.IsZero():
		return rule, errAt(n, "%s: keepAll with maxAge or keepLast: a rule either keeps every session or limits them", where)
	case !keepAll && rule.Policy.IsZero():
		return rule, errAt(n, "%s: sets none of maxAge, keepLast and keepAll", where)
	}
	return rule, nil
}

// parseHolds parses the sequence of holds n.
func parseHolds(n *yaml.Node, errAt errAtFunc) ([]transcript.Hold, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, "holds: want a list of namespace/agent/session")
	}
	var holds []transcript.Hold
	for i, hn := range n.Content {
		if hn.Kind != yaml.ScalarNode {
			return nil, errAt(hn, "holds[%d]: want namespace/agent/session", i)
		}
		if hn.Tag == "!!null" {
			return nil, errAt(hn, "holds[%d]: null: want namespace/agent/session", i)
		}
		h, err := transcript.ParseHold(hn.Value)
		if err != nil {
			return nil, errAt(hn, "holds[%d]: %s", i, strings.TrimPrefix(err.Error(), transcript.ErrInvalidRetention.Error()+": "))
		}
		holds = append(holds, h)
	}
	return holds, nil
}

// parseName checks a namespace or agent of a rule: AnyName or a valid id part.
func parseName(what, v string) (string, error) {
	if v == transcript.AnyName {
		return v, nil
	}
	if err := transcript.ValidatePart(what, v); err != nil {
		return "", errors.New(strings.TrimPrefix(err.Error(), transcript.ErrInvalidRef.Error()+": "))
	}
	return v, nil
}

// parseAge parses a positive duration: Go's syntax (720h, 90m) or whole days (30d).
func parseAge(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q: want a positive duration such as 720h, 90m or 30d", s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > 100_000 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, bad
	}
	return d, nil
}

// parseKeepLast parses a keep-last count: a whole number of at least 1.
func parseKeepLast(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q: want a whole number of at least 1", s)
	}
	return n, nil
}
