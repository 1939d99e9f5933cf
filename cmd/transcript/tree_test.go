package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// fanNodes returns a root with fan children, each with one reply, by writers
// w0 and w1 in turn, in merge order.
func fanNodes(t *testing.T, fan int) []treeNode {
	t.Helper()
	line := func(id, parent string) pi.Entry {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		e, err := pi.ParseEntry([]byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"m %s"}}`, id, p, id)))
		require.NoError(t, err)
		return e
	}
	nodes := []treeNode{{entry: line("root0000", ""), writer: "w0"}}
	for i := range fan {
		nodes = append(nodes, treeNode{entry: line(fmt.Sprintf("b%07d", i), "root0000"), writer: fmt.Sprintf("w%d", i%2)})
	}
	for i := range fan {
		nodes = append(nodes, treeNode{entry: line(fmt.Sprintf("r%07d", i), fmt.Sprintf("b%07d", i)), writer: "w0"})
	}
	return nodes
}

// TestDrawTree_WideFanIsLinear: a branch point with 20,000 branches prints a few
// lines per entry, each as narrow as a small tree's: output linear in the
// entries (it was quadratic, one column per branch on every line).
func TestDrawTree_WideFanIsLinear(t *testing.T) {
	for _, fan := range []int{2_000, 20_000} {
		var out bytes.Buffer
		nodes := fanNodes(t, fan)
		drawTree(&out, nodes, 72)
		perEntry := out.Len() / len(nodes)
		require.Less(t, perEntry, 80, "fan of %d: %d bytes per entry", fan, perEntry)
		longest := 0
		for _, l := range strings.Split(out.String(), "\n") {
			if !strings.Contains(l, "branch point") {
				longest = max(longest, len(l))
			}
		}
		require.Less(t, longest, 100, "fan of %d", fan)
	}
}

// TestDrawTree_Golden pins the drawing of a narrow fan (columns) and of a wide
// one (collapsed: branches one after another).
func TestDrawTree_Golden(t *testing.T) {
	tests := []struct {
		fan  int
		want string
	}{
		{2, `* root0000 message user: m root0000 [w0]  (branch point: 2 branches, by w0, w1)
| \
* | b0000000 message user: m b0000000 [w0]
* | r0000000 message user: m r0000000 [w0]
  * b0000001 message user: m b0000001 [w1]
  @ r0000001 message user: m r0000001 [w0]  (ACTIVE LEAF)
`},
		{9, `* root0000 message user: m root0000 [w0]  (branch point: 9 branches, by w0 ×5, w1 ×4)
: branch 1 of 9 from root0000
* b0000000 message user: m b0000000 [w0]
* r0000000 message user: m r0000000 [w0]
: branch 2 of 9 from root0000
* b0000001 message user: m b0000001 [w1]
* r0000001 message user: m r0000001 [w0]
: branch 3 of 9 from root0000
* b0000002 message user: m b0000002 [w0]
* r0000002 message user: m r0000002 [w0]
: branch 4 of 9 from root0000
* b0000003 message user: m b0000003 [w1]
* r0000003 message user: m r0000003 [w0]
: branch 5 of 9 from root0000
* b0000004 message user: m b0000004 [w0]
* r0000004 message user: m r0000004 [w0]
: branch 6 of 9 from root0000
* b0000005 message user: m b0000005 [w1]
* r0000005 message user: m r0000005 [w0]
: branch 7 of 9 from root0000
* b0000006 message user: m b0000006 [w0]
* r0000006 message user: m r0000006 [w0]
: branch 8 of 9 from root0000
* b0000007 message user: m b0000007 [w1]
* r0000007 message user: m r0000007 [w0]
: branch 9 of 9 from root0000
* b0000008 message user: m b0000008 [w0]
@ r0000008 message user: m r0000008 [w0]  (ACTIVE LEAF)
`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("fan=", tt.fan), func(t *testing.T) {
			var out bytes.Buffer
			drawTree(&out, fanNodes(t, tt.fan), 72)
			require.Equal(t, tt.want, out.String())
		})
	}
}

// TestDrawTree_Pi16Entries: context edits name the entry they edit or remove,
// and that entry names them; usage entries and a compaction's recorded system
// message are shown.
func TestDrawTree_Pi16Entries(t *testing.T) {
	lines := []string{
		`{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"t","message":{"role":"system","content":"be brief"}}`,
		`{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","timestamp":"t","message":{"role":"user","content":"hello"}}`,
		`{"type":"message","id":"cccccccc","parentId":"bbbbbbbb","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]}}`,
		`{"type":"context_edit","id":"dddddddd","parentId":"cccccccc","timestamp":"t","targetId":"cccccccc","replacement":null}`,
		`{"type":"context_edit","id":"eeeeeeee","parentId":"dddddddd","timestamp":"t","targetId":"bbbbbbbb","replacement":{"content":[{"type":"text","text":"hello, edited"}]}}`,
		`{"type":"usage","id":"ffffffff","parentId":"eeeeeeee","timestamp":"t","kind":"cache_warm","provider":"ollama","model":"qwen3","usage":{"input":1}}`,
		`{"type":"compaction","id":"gggggggg","parentId":"ffffffff","timestamp":"t","summary":"sum","firstKeptEntryId":"bbbbbbbb","tokensBefore":9,"systemMessage":{"role":"system","content":"be brief"}}`,
		`{"type":"context_edit","id":"hhhhhhhh","parentId":"gggggggg","timestamp":"t","targetId":"bbbbbbbb"}`,
	}
	var nodes []treeNode
	for _, l := range lines {
		e, err := pi.ParseEntry([]byte(l))
		require.NoError(t, err)
		nodes = append(nodes, treeNode{entry: e, writer: "w0"})
	}
	var out bytes.Buffer
	drawTree(&out, nodes, 72)
	require.Equal(t, `* aaaaaaaa message system: be brief [w0]
* bbbbbbbb message user: hello [w0]  (edited by eeeeeeee; edited by hhhhhhhh)
* cccccccc message assistant: hi [w0]  (removed from the context by dddddddd)
* dddddddd context_edit removes cccccccc from the context [w0]
* eeeeeeee context_edit edits bbbbbbbb: hello, edited [w0]
* ffffffff usage cache_warm ollama/qwen3 [w0]
* gggggggg compaction COMPACTION (tokensBefore 9, keeps from bbbbbbbb, + system message): sum [w0]
@ hhhhhhhh context_edit edits bbbbbbbb (no replacement: changes nothing) [w0]  (ACTIVE LEAF)
`, out.String())
}
