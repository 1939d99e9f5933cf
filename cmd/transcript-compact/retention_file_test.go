package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

const day = 24 * time.Hour

// TestParseRetentionFile: a policy file parses into the rules and holds it says,
// and every mistake is an error naming the file, the line and the field.
func TestParseRetentionFile(t *testing.T) {
	tests := []struct {
		name string
		file string
		want transcript.Retention
		err  string // "" for valid
	}{
		{"every field", `# comments are fine
rules:
  - maxAge: 90d            # every namespace and agent
  - namespace: acme
    maxAge: 720h
    keepLast: 100
  - namespace: acme
    agent: auditor
    keepAll: true
holds:
  - acme/coder/s1
  - "acme/legal/*"
`, transcript.Retention{
			Rules: []transcript.RetentionRule{
				{Namespace: "*", Agent: "*", Policy: transcript.RetentionPolicy{MaxAge: 90 * day}},
				{Namespace: "acme", Agent: "*", Policy: transcript.RetentionPolicy{MaxAge: 720 * time.Hour, KeepLast: 100}},
				{Namespace: "acme", Agent: "auditor"},
			},
			Holds: []transcript.Hold{{Namespace: "acme", Agent: "coder", Session: "s1"}, {Namespace: "acme", Agent: "legal", Session: "*"}},
		}, ""},
		{"holds only", "holds: [a/b/c]\n", transcript.Retention{Holds: []transcript.Hold{{Namespace: "a", Agent: "b", Session: "c"}}}, ""},
		{"empty", "", transcript.Retention{}, "p.yaml: empty: want rules and/or holds"},
		{"not yaml", "rules: [\n", transcript.Retention{}, "p.yaml: line 1: did not find expected node content"},
		{"not a mapping", "- a\n", transcript.Retention{}, "p.yaml:1: want a mapping with the keys rules and holds"},
		{"unknown top key", "rules: []\nretain: 3\n", transcript.Retention{}, `p.yaml:2: unknown key "retain" (want rules, holds)`},
		{"nothing", "rules: []\n", transcript.Retention{}, "p.yaml:1: no rules and no holds"},
		{"top key twice", "rules:\n  - maxAge: 1h\nrules: []\n", transcript.Retention{}, `p.yaml:3: key "rules" given twice (first at line 1)`},
		{"rules not a list", "rules: {maxAge: 1h}\n", transcript.Retention{}, "p.yaml:1: rules: want a list of rules"},
		{"rule not a mapping", "rules: [30d]\n", transcript.Retention{}, "p.yaml:1: rules[0]: want a mapping with the keys namespace, agent, maxAge, keepLast, keepAll"},
		{"unknown rule field", "rules:\n  - maxage: 30d\n", transcript.Retention{},
			`p.yaml:2: rules[0]: unknown field "maxage" (want namespace, agent, maxAge, keepLast, keepAll)`},
		{"rule field twice", "rules:\n  - maxAge: 1h\n    maxAge: 2h\n", transcript.Retention{}, `p.yaml:3: rules[0]: key "maxAge" given twice (first at line 2)`},
		{"bad duration", "rules:\n  - maxAge: 30\n", transcript.Retention{},
			`p.yaml:2: rules[0].maxAge: "30": want a positive duration such as 720h, 90m or 30d`},
		{"negative duration", "rules:\n  - maxAge: -1h\n", transcript.Retention{},
			`p.yaml:2: rules[0].maxAge: "-1h": want a positive duration such as 720h, 90m or 30d`},
		{"zero keep", "rules:\n  - keepLast: 0\n", transcript.Retention{}, `p.yaml:2: rules[0].keepLast: "0": want a whole number of at least 1`},
		{"keep not a number", "rules:\n  - keepLast: many\n", transcript.Retention{}, `p.yaml:2: rules[0].keepLast: "many": want a whole number of at least 1`},
		{"keepAll not a bool", "rules:\n  - keepAll: sure\n", transcript.Retention{}, `p.yaml:2: rules[0].keepAll: "sure": want true or false`},
		{"value a list", "rules:\n  - maxAge: [1h]\n", transcript.Retention{}, "p.yaml:2: rules[0].maxAge: want a single value"},
		{"rule without a limit", "rules:\n  - namespace: acme\n", transcript.Retention{}, "p.yaml:2: rules[0]: sets none of maxAge, keepLast and keepAll"},
		{"keepAll with a limit", "rules:\n  - keepAll: true\n    keepLast: 3\n", transcript.Retention{},
			"p.yaml:2: rules[0]: keepAll with maxAge or keepLast: a rule either keeps every session or limits them"},
		{"bad namespace", "rules:\n  - namespace: a/b\n    maxAge: 1h\n", transcript.Retention{}, `p.yaml:2: rules[0].namespace: namespace "a/b" contains U+002F`},
		{"second rule, same names", "rules:\n  - maxAge: 1h\n  - agent: '*'\n    keepLast: 2\n", transcript.Retention{},
			`p.yaml:3: rules[1]: a second rule for namespace "*", agent "*" (the first is at line 2)`},
		{"hold malformed", "holds:\n  - acme/coder\n", transcript.Retention{}, `p.yaml:2: holds[0]: hold "acme/coder": want namespace/agent/session (an element may be "*")`},
		{"holds not a list", "holds: acme/coder/s1\n", transcript.Retention{}, "p.yaml:1: holds: want a list of namespace/agent/session"},
		// A second document (two policies concatenated) used to be ignored, and
		// a YAML null taken for a namespace or agent named "~" or "null".
		{"two documents", "rules:\n  - keepLast: 1\n---\nrules:\n  - keepLast: 50\n", transcript.Retention{},
			"p.yaml:3: a second YAML document: want one policy in the file"},
		{"null namespace", "rules:\n  - namespace: ~\n    keepLast: 2\n", transcript.Retention{},
			`p.yaml:2: rules[0].namespace: null: want a value (leave the field out for "*")`},
		{"null agent", "rules:\n  - agent: null\n    keepLast: 2\n", transcript.Retention{},
			`p.yaml:2: rules[0].agent: null: want a value (leave the field out for "*")`},
		{"null hold", "holds:\n  - ~\n", transcript.Retention{}, "p.yaml:2: holds[0]: null: want namespace/agent/session"},
		{"null limit", "rules:\n  - keepLast:\n", transcript.Retention{}, "p.yaml:2: rules[0].keepLast: null: want a value"},
		{"an empty second document", "holds: [a/b/c]\n---\n", transcript.Retention{Holds: []transcript.Hold{{Namespace: "a", Agent: "b", Session: "c"}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRetentionFile("p.yaml", []byte(tt.file))
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.NoError(t, got.Validate(), "what parses is a valid retention")
		})
	}
}

func TestReadRetentionFile_Missing(t *testing.T) {
	_, err := readRetentionFile(filepath.Join(t.TempDir(), "nope.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestParseAge(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * day, true},
		{"1d", day, true},
		{"720h", 720 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"0d", 0, false},
		{"0s", 0, false},
		{"-1d", 0, false},
		{"1.5d", 0, false},
		{"d", 0, false},
		{"100001d", 0, false},
		{"30", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseAge(tt.in)
			if !tt.ok {
				require.ErrorContains(t, err, "want a positive duration")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// FuzzParseRetentionFile: any input either parses into a retention that
// validates, or is an error naming the file; never a panic.
func FuzzParseRetentionFile(f *testing.F) {
	f.Add([]byte("rules:\n  - namespace: acme\n    maxAge: 30d\n    keepLast: 3\nholds: [acme/a/*]\n"))
	f.Add([]byte("rules:\n  - keepAll: true\n    agent: x\n"))
	f.Add([]byte("a: &x [1]\nrules: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseRetentionFile("f.yaml", data)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "f.yaml"), err.Error())
			return
		}
		require.NoError(t, r.Validate())
		require.False(t, len(r.Rules) == 0 && len(r.Holds) == 0)
	})
}
