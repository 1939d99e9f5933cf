package pi_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// ent builds an entry line; parent "" is a root, extra is more fields.
func ent(typ, id, parent, extra string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z"%s}`, typ, id, p, extra)
}

func msg(id, parent string) string {
	return ent("message", id, parent, `"message":{"role":"user","content":"`+id+`"}`)
}

func leaf(id, parent, target string) string {
	return ent("leaf", id, parent, `"targetId":`+target)
}

func parse(t *testing.T, lines ...string) []pi.Entry {
	t.Helper()
	out := make([]pi.Entry, len(lines))
	for i, l := range lines {
		var err error
		out[i], err = pi.ParseEntry([]byte(l))
		require.NoError(t, err, l)
	}
	return out
}

func TestActiveLeaf(t *testing.T) {
	tests := []struct {
		name    string
		entries []string
		want    string // "" for a null leaf
	}{
		{"no entries", nil, ""},
		{"the last entry", []string{msg("a", ""), msg("b", "a"), msg("c", "a")}, "c"},
		{"a leaf entry moves it to its target", []string{msg("a", ""), msg("b", "a"), leaf("L", "b", `"a"`)}, "a"},
		{"a leaf entry with a null target", []string{msg("a", ""), leaf("L", "a", "null")}, ""},
		{"a leaf entry without a string target", []string{msg("a", ""), leaf("L", "a", "7")}, ""},
		{"a trailing leaf entry with an unknown target changes nothing",
			[]string{msg("a", ""), msg("b", "a"), leaf("L", "b", `"nowhere"`)}, "b"},
		{"an unknown target after another leaf entry: that one decides",
			[]string{msg("a", ""), msg("b", "a"), leaf("L1", "b", `"a"`), leaf("L2", "a", `"nowhere"`)}, "a"},
		{"an unknown target after a null one: null",
			[]string{msg("a", ""), leaf("L1", "a", "null"), leaf("L2", "a", `"nowhere"`)}, ""},
		{"a leaf entry naming a leaf entry changes nothing",
			[]string{msg("a", ""), leaf("L1", "a", `"a"`), msg("b", "a"), leaf("L2", "b", `"L1"`)}, "b"},
		{"only leaf entries with unknown targets", []string{leaf("L", "", `"x"`)}, ""},
		{"entries after a leaf entry", []string{msg("a", ""), leaf("L", "a", `"a"`), msg("b", "a")}, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entries := parse(t, tc.entries...)
			require.Equal(t, tc.want, pi.ActiveLeafID(entries))
			// Applying the rule entry by entry gives the same answer.
			head, known := "", map[string]bool{}
			for _, e := range entries {
				if e.Type() != pi.TypeLeaf {
					known[e.ID()] = true
				}
				switch move, target := pi.LeafMoveOf(e, func(id string) bool { return known[id] }); move {
				case pi.MoveTo, pi.MoveToTarget:
					head = target
				case pi.MoveToNull:
					head = ""
				}
			}
			require.Equal(t, tc.want, head)
			// The context at the active leaf is the context at that entry.
			want := pi.BuildContextAt(entries, tc.want)
			if tc.want == "" && len(entries) > 0 {
				null := ""
				want = pi.BuildContextFrom(entries, &null)
			}
			require.Equal(t, string(want.JSON()), string(pi.BuildContextFrom(entries, nil).JSON()))
		})
	}
}

func TestPathToRoot(t *testing.T) {
	entries := parse(t, msg("a", ""), msg("b", "a"), leaf("L", "b", `"a"`), msg("c", "L"), msg("d", "gone"),
		msg("x", "y"), msg("y", "x"), msg("e", "c"))
	idx := pi.NewIndex(entries)
	tests := []struct {
		id   string
		want []string
		ok   bool
	}{
		{"b", []string{"a", "b"}, true},
		{"c", []string{"c"}, true}, // a parent that is a leaf entry ends the path
		{"e", []string{"c", "e"}, true},
		{"d", []string{"d"}, true}, // a missing parent ends it too
		{"x", []string{"y", "x"}, true},
		{"L", nil, false}, // leaf entries are never on a path
		{"nowhere", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			path, ok := pi.PathToRoot(entries, idx, tc.id)
			require.Equal(t, tc.ok, ok)
			var got []string
			for _, e := range path {
				got = append(got, e.ID())
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestChildrenBranchPointsLabelsName(t *testing.T) {
	entries := parse(t, msg("a", ""), msg("b", "a"), msg("c", "a"), leaf("L", "a", `"b"`),
		ent("label", "l1", "c", `"targetId":"a","label":"start"`),
		ent("label", "l2", "l1", `"targetId":"b","label":"x"`),
		ent("label", "l3", "l2", `"targetId":"b"`),
		ent("session_info", "s1", "l3", `"name":"first"`),
		ent("session_info", "s2", "s1", `"name":"second"`),
		ent("session_info", "s3", "s2", `"name":""`),
		msg("d", "b"), msg("e", "b"))
	ids := func(es []pi.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID())
		}
		return out
	}
	require.Equal(t, []string{"b", "c"}, ids(pi.Children(entries, "a")))
	require.Empty(t, pi.Children(entries, "d"))
	require.Equal(t, []string{"a", "b"}, ids(pi.BranchPoints(entries)))
	require.Equal(t, map[string]string{"a": "start"}, pi.Labels(entries))
	require.Equal(t, "second", pi.SessionName(entries))
	require.Equal(t, "", pi.SessionName(nil))
}

func TestNewID(t *testing.T) {
	tests := []struct {
		name  string
		rnd   string
		taken map[string]bool
		want  string
		err   error
	}{
		{"8 hex digits", "\x01\x02\x03\x04", nil, "01020304", nil},
		{"a taken id is drawn again", "\x01\x02\x03\x04\xaa\xbb\xcc\xdd", map[string]bool{"01020304": true}, "aabbccdd", nil},
		{"every draw taken", strings.Repeat("\x00", 400), map[string]bool{"00000000": true}, "", pi.ErrIDSpace},
		{"the source runs dry", "\x01", nil, "", errors.New("EOF")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, err := pi.NewID(bytes.NewReader([]byte(tc.rnd)), func(id string) bool { return tc.taken[id] })
			switch {
			case tc.err == pi.ErrIDSpace:
				require.ErrorIs(t, err, pi.ErrIDSpace)
			case tc.err != nil:
				require.Error(t, err)
			default:
				require.NoError(t, err)
				require.Equal(t, tc.want, id)
			}
		})
	}
}

func TestNewEntry(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	tests := []struct {
		name   string
		parent string
		fields []pi.Member
		want   string
		ok     bool
	}{
		{"root, Pi's field order", "", []pi.Member{{Key: "name", Value: pi.AppendString(nil, "<a&b>")}},
			`{"type":"session_info","id":"0a","parentId":null,"timestamp":"2026-01-02T03:04:05.006Z","name":"<a&b>"}`, true},
		{"child, value compacted", "p", []pi.Member{{Key: "data", Value: []byte("{ \"k\" :\n 1 }")}},
			`{"type":"session_info","id":"0a","parentId":"p","timestamp":"2026-01-02T03:04:05.006Z","data":{"k":1}}`, true},
		{"invalid value", "", []pi.Member{{Key: "data", Value: []byte("{")}}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := pi.NewEntry(pi.TypeSessionInfo, "0a", tc.parent, ts, tc.fields...)
			if !tc.ok {
				require.ErrorIs(t, err, pi.ErrInvalidEntry)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, string(e.Raw()))
		})
	}
}
