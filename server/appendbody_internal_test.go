package server

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/pi"
)

// decodeGeneral is the general path of an append's body: decodeJSON's decoder
// (unknown fields refused, nothing after the value), then each entry compacted.
func decodeGeneral(data []byte) (expected *string, entries [][]byte, ok bool) {
	var req AppendRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(&req) != nil {
		return nil, nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, false
	}
	for _, raw := range req.Entries {
		entries = append(entries, pi.CompactJSON(raw))
	}
	if req.ExpectedHead != nil {
		// The head is an entry id: decoded as the store decodes ids
		// (jsonscan.String: a lone surrogate is its WTF-8 bytes, where
		// encoding/json gives U+FFFD), from the value encoding/json took.
		var raw struct {
			ExpectedHead json.RawMessage `json:"expectedHead"`
		}
		if json.Unmarshal(data, &raw) != nil {
			return nil, nil, false
		}
		h, ok := jsonscan.String(raw.ExpectedHead)
		if !ok {
			return nil, nil, false
		}
		expected = &h
	}
	return expected, entries, true
}

// requireSameReading checks that the fast reading of body, when it takes it,
// gives what the general path gives. It may take a body the general path
// refuses only with the body unchecked and unchanged, and an entry that is not
// valid JSON, which the repository refuses before anything else (so that the
// request is answered as the general path answers it, appendBody.refused).
func requireSameReading(t *testing.T, body []byte) (fast bool) {
	t.Helper()
	wantHead, want, wantOK := decodeGeneral(body)
	b, fast := readAppendInPlace(bytes.Clone(body))
	if !fast {
		return false
	}
	if !wantOK {
		require.NotNil(t, b.unchecked, "the fast reading took a body the decoder refuses, as checked: %q", body)
		require.Equal(t, string(body), string(b.unchecked), "an unchecked body is left as received")
		bad := false
		for _, e := range b.entries {
			bad = bad || !json.Valid(e)
		}
		require.True(t, bad, "the fast reading took a body the decoder refuses, with valid entries: %q", body)
		return true
	}
	require.Equal(t, wantHead, b.expected, "expected head of %q", body)
	require.Equal(t, len(want), len(b.entries), "entries of %q", body)
	for i := range want {
		require.Equal(t, string(want[i]), string(b.entries[i]), "entry %d of %q", i, body)
	}
	return true
}

var appendBodies = []struct {
	body string
	fast bool // the fast reading takes it
}{
	{`{"expectedHead":null,"entries":[{"type":"message","id":"a","parentId":null}]}`, true},
	{` { "expectedHead" : "a" , "entries" : [ {"id" : "b", "text":"x y\tz \"q\" \\ ]}"} , {"id":"c"} ] } ` + "\n", true},
	{`{"entries":[{"id":"a"},null,1,"s",[1,{"k":[2]}],true,-1.5e3]}`, true},
	{"{\"entries\":[\n  {\n    \"id\": \"a\",\n    \"m\": {\"c\": [ 1, 2 ]}\n  }\n]}", true},
	{`{"ENTRIES":[{"id":"a"}],"ExpectedHEAD":"h"}`, true},
	{`{"entries":[{"id":"a"}],"entries":[{"id":"b"}]}`, true},
	{`{"entries":[{"id":"a"}],"entries":null}`, true},
	{`{"expectedHead":"h","expectedHead":null,"entries":[]}`, true},
	{`{"expectedHead":"\u00e9\ud83d\ude00","entries":[{}]}`, true},
	{`{}`, true},
	{`{"entries":[{"id":"a"}],"extra":1}`, false},
	{`{"entr\u0069es":[{"id":"a"}]}`, true},
	{`{"\u0065xpectedHead":"h","entries":[]}`, true},
	{`{"expectedHead":1,"entries":[]}`, false},
	{`{"expectedHead":"h","entries":{"id":"a"}}`, false},
	{`{"entries":"x"}`, false},
	{`{"entries":[{"id":"a"}]} x`, false},
	{`{"entries":[{"id":"a"}]}{}`, false},
	{`{"entries":[{"id":"a"}`, false},
	{`[{"id":"a"}]`, false},
	// Entries that are not JSON, in a body that is JSON around them: taken
	// unchecked when nothing is to be compacted (the repository refuses them),
	// left to the general path otherwise.
	{`{"entries":[{"id":"a"},{"id":tru}]}`, true},
	{`{"entries":[{"id":"a"},{"id":"b",}]}`, true},
	{`{"entries":[nul]}`, true},
	{`{"entries":[{"id":"a" "b":1}]}`, false},
	{`{"entries":[{"id":1 2}]}`, false},
	{`{"entries":[{"id":"a"}], "expectedHead":tru}`, false},
	{`{"entries":[{"id":"a"}] "expectedHead":null}`, false},
	{`null`, false},
	{`"entries"`, false},
}

// The fast reading of an append's body agrees with the general decoder on every
// body it takes, and leaves the others (unknown keys, other types,
// malformed or trailing JSON) to the general path, whose error answers they get.
func TestReadAppendInPlace(t *testing.T) {
	for _, tt := range appendBodies {
		t.Run(tt.body, func(t *testing.T) {
			require.Equal(t, tt.fast, requireSameReading(t, []byte(tt.body)))
		})
	}
}

func FuzzReadAppendInPlace(f *testing.F) {
	for _, tt := range appendBodies {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		requireSameReading(t, body)
	})
}
