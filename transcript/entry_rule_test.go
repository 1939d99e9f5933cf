package transcript_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// One rule decides an entry's id and parent for the session model and for the
// store: pi.ParseEntry (which the repository checks an append with) refuses
// exactly the lines of a known type that transcript.ParseEntry (which the store
// checks a segment's entries with) refuses, and both read the same links. A
// numeric parentId used to pass the first and fail the second.
func TestParseEntry_OneRule(t *testing.T) {
	cases := []struct {
		raw    string
		valid  bool
		parent string
	}{
		{`{"type":"message","id":"a","parentId":null}`, true, ""},
		{`{"type":"message","id":"a"}`, true, ""},
		{`{"type":"message","id":"a","parentId":""}`, true, ""},
		{`{"type":"message","id":"a","parentId":"p"}`, true, "p"},
		{`{"type":"message","id":"a","parentId":"p","parentId":null}`, true, ""},
		{`{"type":"message","id":"a","parentId":5}`, false, ""},
		{`{"type":"message","id":"a","parentId":{"id":"p"}}`, false, ""},
		{`{"type":"message","id":"a","parentId":true}`, false, ""},
		{`{"type":"message","id":"a","parentId":["p"]}`, false, ""},
		{`{"type":"message","id":""}`, false, ""},
		{`{"type":"message","id":7}`, false, ""},
		{`{"type":"message"}`, false, ""},
		{"{\"type\":\"message\",\n\"id\":\"a\"}", false, ""},
		{`{"type":"message","id":"a",}`, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			pe, perr := pi.ParseEntry([]byte(tc.raw))
			te, terr := transcript.ParseEntry([]byte(tc.raw))
			l, lerr := pi.ParseLinks([]byte(tc.raw))
			for _, err := range []error{perr, terr, lerr} {
				require.Equal(t, tc.valid, err == nil, "%v", err)
				if err != nil {
					require.True(t, errors.Is(err, pi.ErrInvalidEntry), "%v", err)
				}
			}
			if !tc.valid {
				return
			}
			p, _ := pe.ParentID()
			require.Equal(t, tc.parent, p)
			require.Equal(t, tc.parent, te.ParentID)
			require.Equal(t, tc.parent, l.ParentID)
			require.Equal(t, pe.ID(), te.ID)
		})
	}
}
