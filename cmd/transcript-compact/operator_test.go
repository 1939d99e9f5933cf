package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Flag values an operator gets wrong are usage errors, before the store is
// opened. A retention flag given with an empty or zero value (a cron line with
// --max-age="$MAX_AGE" whose variable is unset, --keep-last 0 meant as "keep
// none"): the job never runs as if no policy had been asked for, deleting
// nothing and saying nothing about retention.
func TestJob_OperatorFlagMistakes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"keep-last zero", []string{"--keep-last", "0"}, "Error: --keep-last 0: want at least 1"},
		{"keep-last zero beside max-age", []string{"--keep-last", "0", "--max-age", "1h"}, "Error: --keep-last 0: want at least 1"},
		{"max-age empty", []string{"--max-age="}, `Error: --max-age "": want a positive duration`},
		{"max-age empty beside keep-last", []string{"--max-age", "", "--keep-last", "3"}, `Error: --max-age "": want a positive duration`},
		{"retention empty", []string{"--retention="}, "Error: --retention: no FILE given"},
		// A strict append writes its segment, then its head: a segment that a
		// short --uncommitted-age deletes in between is committed all the same,
		// and the acknowledged append is lost.
		{"uncommitted-age too short", []string{"--uncommitted-age", "5s"}, "Error: --uncommitted-age 5s: want at least 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := t.TempDir()
			r := runBinary(t, context.Background(), append([]string{"--store", "file://" + store}, tt.args...)...)
			require.Equal(t, 2, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, tt.want)
			require.Empty(t, r.stdout)
			entries, err := os.ReadDir(store)
			require.NoError(t, err)
			require.Empty(t, entries)
		})
	}
}

// TestJob_HoldMatchingNothingIsNamed: a hold that names no session the run
// examined (a typo: acme/codr/* for acme/coder/*) protects nothing, and the
// sessions it was meant to keep go. The job names it on stderr and in --json
// (retention.unmatchedHolds), in a dry run too; a hold outside what the run
// selects (another namespace than --ns) is not named.
func TestJob_HoldMatchingNothingIsNamed(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	writeSessions(t, s, "coder", 2, 1)
	for _, args := range [][]string{{"--dry-run"}, nil} {
		r := runBinary(t, context.Background(), append([]string{"--store", url, "--json", "--keep-last", "5",
			"--hold", "acme/codr/*", "--hold", "acme/coder/s000", "--hold", "other/coder/*", "--ns", "acme"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, "retention: hold acme/codr/* names no session this run examined: check its spelling\n")
		require.NotContains(t, r.stderr, "hold acme/coder/s000")
		require.NotContains(t, r.stderr, "hold other/coder/*")
		requireSchema(t, []byte(r.stdout), "transcript-compact")
		require.Equal(t, []string{"acme/codr/*"}, r.summary(t).Retention.UnmatchedHolds)
	}
}

// TestJob_RuleMatchingNothingIsNamed: a rule for a namespace or agent that names
// none the run examined (ACME for acme: names are case-sensitive) deletes
// nothing, and the job used to say nothing of it. It names the rule on stderr
// and in --json (retention.unmatchedRules); a rule outside --ns is not named.
func TestJob_RuleMatchingNothingIsNamed(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	writeSessions(t, s, "coder", 2, 1)
	policy := filepath.Join(t.TempDir(), "retention.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(`rules:
  - namespace: ACME
    keepLast: 1
  - namespace: acme
    agent: coder
    keepLast: 5
`), 0o644))
	for _, args := range [][]string{{"--dry-run"}, nil} {
		r := runBinary(t, context.Background(), append([]string{"--store", url, "--json", "--retention", policy}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, "retention: the rule for namespace ACME, agent * (keep-last 1) names no agent this run examined: check its spelling\n")
		require.NotContains(t, r.stderr, "rule for namespace acme")
		requireSchema(t, []byte(r.stdout), "transcript-compact")
		require.Equal(t, []string{"namespace ACME, agent *"}, r.summary(t).Retention.UnmatchedRules)
	}
	r := runBinary(t, context.Background(), "--store", url, "--json", "--retention", policy, "--ns", "acme")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "names no agent", "--ns acme does not select namespace ACME")
	require.Empty(t, r.summary(t).Retention.UnmatchedRules)
}
