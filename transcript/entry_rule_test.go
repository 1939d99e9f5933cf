package transcript_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
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

// TestParseEntry_IDsTheStoreCanName: the longest id and parentId the rule lets
// through is the longest string a segment's metadata holds, so an entry that
// is stored can always be compacted (it used to be stored in a level-0 segment,
// unless it came last, and then fail every compaction of its session).
func TestParseEntry_IDsTheStoreCanName(t *testing.T) {
	require.Equal(t, segment.MaxStringLen, pi.MaxIDLen)
	ctx := t.Context()
	s := newStore(t, membucket.New(), transcript.Config{})
	w := newWriter(t, "w")
	long := strings.Repeat("i", pi.MaxIDLen)
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry(long, ""), entry("b", long)}, w)
	require.NoError(t, err, "ids at the limit are stored")
	_, err = s.AppendSegment(ctx, ref, [][]byte{entry(long+"i", ""), entry("c", "b")}, w)
	require.ErrorIs(t, err, pi.ErrInvalidEntry, "an id over the limit is refused, wherever it is in the batch")
	_, err = s.AppendSegment(ctx, ref, [][]byte{entry("d", "b")}, w)
	require.NoError(t, err)
	_, err = s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, []string{long, "b", "d"}, ids(got))
	require.Len(t, got.Segments, 1)
}
