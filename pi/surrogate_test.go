package pi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// TestLinks_LoneSurrogateIDs: the ids "\ud800" and "\udc00" (JSON escapes of
// lone UTF-16 surrogates) are two ids for Pi (JavaScript), distinct from
// "\ufffd", from the pair "\ud800\udc00" and from the raw bytes ED A0 80 (which
// Node reads as three U+FFFD). Every reader of an entry's links (ParseLinks,
// ScanLinks, ParseEntry, ScanEntry, ParseHeader) must tell them apart as Pi
// does; they all decoded a lone surrogate as U+FFFD, so the store took two
// entries for one.
func TestLinks_LoneSurrogateIDs(t *testing.T) {
	tests := []struct {
		id, parent string // as written in the line
		wantID     string // decoded (WTF-8)
		wantParent string
	}{
		{`"\ud800"`, `null`, "\xed\xa0\x80", ""},
		{`"\udc00"`, `"\ud800"`, "\xed\xb0\x80", "\xed\xa0\x80"},
		{`"\ufffd"`, `"\udc00"`, "\uFFFD", "\xed\xb0\x80"},
		{`"\ud800\udc00"`, `"\ufffd"`, "\U00010000", "\uFFFD"},
		{"\"\xed\xa0\x80\"", `"\uDC00"`, "\uFFFD\uFFFD\uFFFD", "\xed\xb0\x80"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		line := []byte(`{"type":"message","id":` + tt.id + `,"parentId":` + tt.parent + `,"timestamp":"2026-01-01T00:00:00.000Z"}`)
		for name, parse := range map[string]func([]byte) (pi.Links, error){
			"ParseLinks": pi.ParseLinks, "ScanLinks": pi.ScanLinks,
			"ParseEntry": func(b []byte) (pi.Links, error) { e, err := pi.ParseEntry(b); return e.Links(), err },
			"ScanEntry":  func(b []byte) (pi.Links, error) { e, err := pi.ScanEntry(b); return e.Links(), err },
		} {
			l, err := parse(line)
			require.NoError(t, err, "%s %s", name, line)
			require.Equal(t, tt.wantID, l.ID, "%s %s", name, line)
			require.Equal(t, tt.wantParent, l.ParentID, "%s %s", name, line)
		}
		require.False(t, seen[tt.wantID], "%s: an id of its own", tt.id)
		seen[tt.wantID] = true
		h, err := pi.ParseHeader([]byte(`{"type":"session","version":3,"id":` + tt.id + `,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`))
		require.NoError(t, err)
		require.Equal(t, tt.wantID, h.ID(), "a session header's id: %s", tt.id)
	}
}

// TestAppendString_LoneSurrogates: an id decoded from a line is written back
// as the same id: a lone surrogate (WTF-8, as jsonscan decodes it) as the
// escape JSON.stringify writes, where encoding/json wrote \ufffd (a new entry
// whose parent is the entry "\ud800" named "\ufffd" instead). Any other byte
// that is not UTF-8 is \ufffd, and the output is always valid JSON.
func TestAppendString_LoneSurrogates(t *testing.T) {
	for s, want := range map[string]string{
		"\xed\xa0\x80":             `"\ud800"`,
		"a\xed\xb0\x80\"<é\n":      `"a\udc00\"<é\n"`,
		"\xed\xbf\xbf\xed\xa0\x80": `"\udfff\ud800"`,
		"\xff\xed\xa0":             `"\ufffd\ufffd\ufffd"`,
		"\U00010000\uFFFD":         `"` + "\U00010000\uFFFD" + `"`,
	} {
		got := pi.AppendString(nil, s)
		require.Equal(t, want, string(got), "%q", s)
		require.True(t, json.Valid(got), "%q", s)
	}
	id, parent := "\xed\xa0\x80", "\xed\xb0\x80"
	e, err := pi.NewEntry(pi.TypeLabel, id, parent, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		pi.Member{Key: "targetId", Value: pi.AppendString(nil, parent)})
	require.NoError(t, err)
	require.Contains(t, string(e.Raw()), `"id":"\ud800","parentId":"\udc00"`)
	require.Equal(t, id, e.ID())
	got, _ := e.ParentID()
	require.Equal(t, parent, got)
	target, _ := e.StringField("targetId")
	require.Equal(t, parent, target)
}
