package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestVerify_TwoHeaders: a session holding two session headers (which imports
// and appends wrote before they refused a second header) is one problem line
// naming both headers and their segments; with one header there is none.
func TestVerify_TwoHeaders(t *testing.T) {
	ctx := t.Context()
	store := "file://" + filepath.Join(t.TempDir(), "store")
	bk, prefix := openBucket(t, store)
	s, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(t, err)
	defer s.Close()
	w := transcript.NewRandomWriter()
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "two"}
	header := func(id string) []byte {
		return []byte(`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`)
	}
	first, err := s.AppendSegment(ctx, ref, [][]byte{header("h-one"), []byte(entryLine("e1", ""))}, w)
	require.NoError(t, err)
	r := cli(t, "verify", "--store", store)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "0 problems")

	second, err := s.AppendSegment(ctx, ref, [][]byte{header("h-two"), []byte(entryLine("e2", "e1"))}, w)
	require.NoError(t, err)
	r = cli(t, "verify", "--store", store)
	require.Equal(t, 1, r.code, r.stderr)
	var lines []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "session headers") && !strings.Contains(l, "not counting") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 1, r.stdout)
	for _, want := range []string{"2 session headers", "h-one in " + first.Key, "h-two in " + second.Key} {
		require.Contains(t, lines[0], want)
	}
	require.Contains(t, r.stdout, "1 problem in 2 segments of 1 session")
}

// TestMayBeHeader: the filter verify puts before pi.ParseHeader passes every line
// ParseHeader accepts (the type written plainly or escaped) and spares it the
// lines that cannot be one.
func TestMayBeHeader(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		header bool // ParseHeader accepts it
		may    bool
	}{
		{"header", headerLine("s1"), true, true},
		{"header, type escaped", strings.Replace(headerLine("s1"), `"session"`, `"\u0073ession"`, 1), true, true},
		{"message", entryLine("a1", ""), false, false},
		{"message naming a session", `{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"session"}}`, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			require.Equal(t, tc.header, isHeader(raw))
			require.Equal(t, tc.may, mayBeHeader(raw))
		})
	}
}
