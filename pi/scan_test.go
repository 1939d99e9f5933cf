package pi_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// scanCases are lines of valid JSON, entries and not: ScanEntry must answer
// each exactly as ParseEntry does.
var scanCases = []struct {
	name, line string
	ok         bool
}{
	{"message", `{"type":"message","id":"a1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"hi"}}`, true},
	{"child", `{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":"x"}]}}`, true},
	{"escaped key", `{"t\u0079pe":"label","id":"a3","parentId":"a2","label":"x"}`, true},
	{"last key wins", `{"type":"message","id":"a4","id":"a5","parentId":""}`, true},
	{"numeric parentId", `{"type":"message","id":"a1","parentId":42}`, false},
	{"missing type", `{"id":"a1","parentId":null}`, false},
	{"empty id", `{"type":"message","id":"","parentId":null}`, false},
	{"header", `{"type":"session","version":3,"id":"s","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/w"}`, false},
	{"array", `[1,2]`, false},
	{"last type wins", `{"type":"label","id":"a6","parentId":"a5","type":"leaf","targetId":"a5","label":"x"}`, true},
	{"non-string type", `{"type":7,"id":"a7"}`, false},
	{"nested type", `{"type":"custom","id":"a8","details":{"type":"message","id":"x"},"customType":"c"}`, true},
	{"unknown type", `{"type":"some_future_type","id":"a9","parentId":"a8","name":"n"}`, true},
	{"session info", `{"type":"session_info","id":"b1","parentId":"a9","name":"n\u00e9"}`, true},
}

// longIDCases are scanCases at and over MaxIDLen. They are kept out of the fuzz
// seeds: mutating and minimising 64 KiB inputs stalls the fuzzer.
var longIDCases = []struct {
	name, line string
	ok         bool
}{
	{"id at the limit", `{"type":"message","id":"` + strings.Repeat("i", pi.MaxIDLen) + `"}`, true},
	{"id over the limit", `{"type":"message","id":"` + strings.Repeat("i", pi.MaxIDLen+1) + `"}`, false},
	{"parentId at the limit", `{"type":"message","id":"c1","parentId":"` + strings.Repeat("p", pi.MaxIDLen) + `"}`, true},
	{"parentId over the limit", `{"type":"message","id":"c1","parentId":"` + strings.Repeat("p", pi.MaxIDLen+1) + `"}`, false},
}

// fieldNames are the top-level fields Entry.Field knows.
var fieldNames = []string{"type", "id", "parentId", "timestamp", "message", "thinkingLevel", "provider", "modelId",
	"summary", "firstKeptEntryId", "tokensBefore", "details", "fromId", "customType", "content", "display",
	"targetId", "label", "name", "version"}

// TestScanEntryIsParseEntry: on valid JSON, ScanEntry accepts and refuses what
// ParseEntry does, with the same fields.
func TestScanEntryIsParseEntry(t *testing.T) {
	for _, tc := range append(slices.Clone(scanCases), longIDCases...) {
		t.Run(tc.name, func(t *testing.T) {
			requireSameEntry(t, []byte(tc.line))
			_, err := pi.ScanEntry([]byte(tc.line))
			require.Equal(t, tc.ok, err == nil, "%v", err)
		})
	}
}

// FuzzScanEntry: ScanEntry, and EntryOfLinks of ScanLinks, agree with
// ParseEntry on every line of valid JSON, and Entry.Links with ScanLinks.
func FuzzScanEntry(f *testing.F) {
	for _, tc := range scanCases {
		f.Add([]byte(tc.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if !json.Valid(line) || bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		requireSameEntry(t, line)
	})
}

// requireSameEntry checks that ScanEntry, and EntryOfLinks of what ScanLinks
// reads, accept and refuse line as ParseEntry does, and answer every field as
// it does: EntryOfLinks locates fields only when asked.
func requireSameEntry(t *testing.T, line []byte) {
	t.Helper()
	want, werr := pi.ParseEntry(line)
	got, gerr := pi.ScanEntry(line)
	require.Equal(t, werr == nil, gerr == nil, "ParseEntry: %v, ScanEntry: %v", werr, gerr)
	requireSameFields(t, want, werr, got, gerr)
	links, lerr := pi.ScanLinks(line)
	if lerr != nil {
		require.Error(t, werr, "ScanLinks refused an entry: %v", lerr)
		return
	}
	if werr == nil {
		require.Equal(t, want.Type(), links.Type)
		require.Equal(t, links, want.Links(), "Entry.Links is what ScanLinks reads")
		if strict, err := pi.ParseLinks(line); err == nil {
			require.Equal(t, strict, want.Links(), "Entry.Links is what ParseLinks reads")
		}
	}
	lazy, lzerr := pi.EntryOfLinks(line, links)
	require.Equal(t, werr == nil, lzerr == nil, "ParseEntry: %v, EntryOfLinks: %v", werr, lzerr)
	requireSameFields(t, want, werr, lazy, lzerr)
}

// requireSameFields checks that got answers what want does (both made from one
// line, want by ParseEntry).
func requireSameFields(t *testing.T, want pi.Entry, werr error, got pi.Entry, gerr error) {
	t.Helper()
	if werr != nil {
		require.ErrorIs(t, gerr, pi.ErrInvalidEntry)
		return
	}
	for _, name := range fieldNames {
		wv, wok := want.Field(name)
		gv, gok := got.Field(name)
		require.Equal(t, []any{string(wv), wok}, []any{string(gv), gok}, "field %s", name)
		ws, wok := want.StringField(name)
		gs, gok := got.StringField(name)
		require.Equal(t, []any{ws, wok}, []any{gs, gok}, "string field %s", name)
	}
	require.Equal(t, want.Role(), got.Role())
	require.Equal(t, pi.SessionName([]pi.Entry{want}), pi.SessionName([]pi.Entry{got}))
	require.Equal(t, want.Type(), got.Type())
	require.Equal(t, want.ID(), got.ID())
	wp, wok := want.ParentID()
	gp, gok := got.ParentID()
	require.Equal(t, []any{wp, wok}, []any{gp, gok})
	require.Equal(t, want.Timestamp(), got.Timestamp())
	require.Equal(t, want.Message(), got.Message())
	require.Equal(t, want.Raw(), got.Raw())
}
