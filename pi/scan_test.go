package pi_test

import (
	"bytes"
	"encoding/json"
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
}

// TestScanEntryIsParseEntry: on valid JSON, ScanEntry accepts and refuses what
// ParseEntry does, with the same fields.
func TestScanEntryIsParseEntry(t *testing.T) {
	for _, tc := range scanCases {
		t.Run(tc.name, func(t *testing.T) {
			requireSameEntry(t, []byte(tc.line))
			_, err := pi.ScanEntry([]byte(tc.line))
			require.Equal(t, tc.ok, err == nil, "%v", err)
		})
	}
}

// FuzzScanEntry: ScanEntry agrees with ParseEntry on every line of valid JSON.
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

func requireSameEntry(t *testing.T, line []byte) {
	t.Helper()
	want, werr := pi.ParseEntry(line)
	got, gerr := pi.ScanEntry(line)
	require.Equal(t, werr == nil, gerr == nil, "ParseEntry: %v, ScanEntry: %v", werr, gerr)
	if werr != nil {
		require.ErrorIs(t, gerr, pi.ErrInvalidEntry)
		return
	}
	require.Equal(t, want.Type(), got.Type())
	require.Equal(t, want.ID(), got.ID())
	wp, wok := want.ParentID()
	gp, gok := got.ParentID()
	require.Equal(t, []any{wp, wok}, []any{gp, gok})
	require.Equal(t, want.Timestamp(), got.Timestamp())
	require.Equal(t, want.Message(), got.Message())
	require.Equal(t, want.Raw(), got.Raw())
}
