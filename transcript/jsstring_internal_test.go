package transcript

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStoredObjects_KeepEntryStrings: the strict head and the cached summary
// keep an entry id, cwd and name as the store read them from the entries,
// including a lone UTF-16 surrogate ("\ud800", kept as its WTF-8 bytes): a
// head written by one server and read by another names the same entry. They
// were written with encoding/json, which makes each of those bytes U+FFFD: the
// other server's head was an id no entry has. Ordinary strings are written as
// before.
func TestStoredObjects_KeepEntryStrings(t *testing.T) {
	when := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"a1b2c3d4", "\xed\xa0\x80", "x\xed\xb0\x80y", "\uFFFD", "\U00010000", `quote " and \ and <tag>`} {
		sum := &Summary{Created: when, Updated: when, Cwd: "/w/" + s, ParentSession: "p" + s, Name: "n" + s, Entries: 3}
		data, err := encodeHead(Head{Version: 7, Entry: s, Segments: []string{}, Summary: sum})
		require.NoError(t, err)
		require.True(t, json.Valid(data), "%s", data)
		h, err := decodeHead(data)
		require.NoError(t, err)
		require.Equal(t, s, h.Entry, "head of %q: %s", s, data)
		require.Equal(t, *sum, *h.Summary, "%s", data)

		data, err = encodeSummary(CachedSummary{Summary: *sum, Leaf: s, Tag: "t"})
		require.NoError(t, err)
		require.True(t, json.Valid(data), "%s", data)
		cs, err := decodeSummary(data)
		require.NoError(t, err)
		require.Equal(t, s, cs.Leaf, "leaf of %q: %s", s, data)
		require.Equal(t, *sum, cs.Summary, "%s", data)
	}
	data, err := encodeHead(Head{Version: 1, Entry: "e1", Segments: []string{}})
	require.NoError(t, err)
	require.JSONEq(t, `{"format":1,"version":1,"head":"e1","segments":[]}`, string(data))
	_, err = decodeHead([]byte(`{"format":1,"version":1,"head":7,"segments":[]}`))
	require.ErrorIs(t, err, ErrInvalidHead, "a head that is no string")
}
