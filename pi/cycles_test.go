package pi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

func TestOnParentCycleOf(t *testing.T) {
	tests := []struct {
		name string
		// lines are "id:parent" ("id:" a root), a "!" before the id for a
		// "leaf" entry.
		lines string
		want  string // ids on a cycle, in order
	}{
		{"no cycle", "r: a:r b:a c:r", ""},
		{"dangling parent", "a:gone b:a", ""},
		{"empty parent is a root", `a:`, ""},
		{"2-cycle", "r: a:b b:a", "a b"},
		{"3-cycle", "r: a:c b:a c:b", "a b c"},
		{"self-parent", "r: s:s", "s"},
		{"descendants are not on it", "a:b b:a k:a kk:k", "a b"},
		{"a branch into the cycle", "r: x:r a:b b:a y:x", "a b"},
		{"two cycles", "a:b b:a s:s c:d d:e e:c", "a b s c d e"},
		{"through a leaf entry (Pi does not know them)", "a:L !L:a", "a L"},
		{"tail leading into a cycle", "t:a a:b b:c c:a", "a b c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var entries []pi.Entry
			for _, l := range strings.Fields(tt.lines) {
				id, parent, _ := strings.Cut(l, ":")
				line := msg(id, parent)
				if strings.HasPrefix(id, "!") {
					id = id[1:]
					line = ent("leaf", id, parent, `"targetId":null`)
				}
				if parent == "" && tt.name == "empty parent is a root" {
					line = strings.Replace(line, `"parentId":null`, `"parentId":""`, 1)
				}
				e, err := pi.ParseEntry([]byte(line))
				require.NoError(t, err)
				entries = append(entries, e)
			}
			on := pi.OnParentCycleOf(entries)
			var got []string
			for i, e := range entries {
				if on != nil && on[i] {
					got = append(got, e.ID())
				}
			}
			require.Equal(t, tt.want, strings.Join(got, " "))
			if tt.want == "" {
				require.Nil(t, on)
			}
		})
	}
}
