package sessiontree_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
)

const updateEnv = "SESSIONTREE_UPDATE_GOLDEN"

// golden compares got with testdata/name, rewriting it when SESSIONTREE_UPDATE_GOLDEN=1.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv(updateEnv) == "1" {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run with %s=1 to create it", updateEnv)
	require.Equal(t, string(want), string(got), "golden %s differs; if intended, rerun with %s=1", name, updateEnv)
}

func importFixture(t *testing.T, name string) (*sessiontree.Tree, sessiontree.LoadReport) {
	t.Helper()
	tr, rep, err := sessiontree.Import(testConfig(t), sessiontree.Identity{}, "agent", "s1", bytes.NewReader(readFixture(t, name)))
	require.NoError(t, err)
	return tr, rep
}

func TestBuildContext_FixtureV3(t *testing.T) {
	tr, rep := importFixture(t, "pi-v3-browse-session.jsonl")
	require.True(t, rep.Clean())
	require.Equal(t, 12, tr.Len())
	c := tr.BuildContext()
	// firstKeptEntryId is the compaction itself: the system message it recorded,
	// the summary and what follows (Pi 1.6's rules, docs/ENTRIES.md).
	require.Len(t, c.Messages, 3)
	require.Equal(t, `{"sections":{"preamble":"You are an expert coding assistant operating inside pi."}}`, string(c.Messages[0]))
	require.JSONEq(t, `{"role":"compactionSummary","summary":"Summary of earlier turns","tokensBefore":1234,"timestamp":1790375400000}`, string(c.Messages[1]))
	require.Equal(t, `{"role":"user","content":[{"type":"text","text":"continue from the summary"}],"timestamp":1790375405000}`, string(c.Messages[2]))
	require.Equal(t, "off", c.ThinkingLevel)
	require.Equal(t, &sessiontree.Model{Provider: "ollama", ModelID: "qwen3:1.7b"}, c.Model)
	golden(t, "pi-v3-browse-session.context.json", append(c.JSON(), '\n'))

	// Before the compaction: the system message, and the usage and context_edit
	// entries on the path; the edit (a null replacement) removes the assistant's
	// "hi there".
	c = tr.BuildContextAt("9ca3d7e8")
	require.Len(t, c.Messages, 4)
	require.Contains(t, string(c.Messages[0]), `"role":"system"`)
	require.NotContains(t, string(c.JSON()), "hi there")
	require.Contains(t, string(tr.BuildContextAt("8b92c5d6").JSON()), "hi there")
	golden(t, "pi-v3-browse-session.at-9ca3d7e8.context.json", append(c.JSON(), '\n'))

	// json.Marshal gives the same document (compacted, HTML-escaped).
	m, err := json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, string(c.JSON()), string(m))
}

func TestBuildContext_FixtureV1(t *testing.T) {
	tr, rep := importFixture(t, "pi-v1-prompt-cache-replay.jsonl")
	require.True(t, rep.Clean())
	c := tr.BuildContext()
	require.Len(t, c.Messages, 6)
	require.Equal(t, &sessiontree.Model{Provider: "openai", ModelID: "gpt-4o"}, c.Model)
	require.Equal(t, "off", c.ThinkingLevel)
	golden(t, "pi-v1-prompt-cache-replay.context.json", append(c.JSON(), '\n'))
}

func TestImport_V1MigrationDeterministic(t *testing.T) {
	a, _ := importFixture(t, "pi-v1-prompt-cache-replay.jsonl")
	b, _ := importFixture(t, "pi-v1-prompt-cache-replay.jsonl")
	var wa, wb bytes.Buffer
	require.NoError(t, a.Export(&wa))
	require.NoError(t, b.Export(&wb))
	require.Equal(t, wa.String(), wb.String())
	golden(t, "pi-v1-prompt-cache-replay.migrated.jsonl", wa.Bytes())

	h := a.Header()
	require.Equal(t, 3, h.Version())
	require.Contains(t, string(h.Raw()), `"provider":"openai","modelId":"gpt-4o","thinkingLevel":"off","version":3`)
	es := a.Entries()
	prev := ""
	for _, e := range es {
		require.Len(t, e.ID(), 8)
		p, ok := e.ParentID()
		require.Equal(t, prev != "", ok)
		require.Equal(t, prev, p)
		prev = e.ID()
	}
	// The migrated export is a v3 file that re-imports byte-identically.
	c, _, err := sessiontree.Import(testConfig(t), sessiontree.Identity{}, "agent", "s1", bytes.NewReader(wa.Bytes()))
	require.NoError(t, err)
	var wc bytes.Buffer
	require.NoError(t, c.Export(&wc))
	require.Equal(t, wa.String(), wc.String())
}

func TestImport_V1CompactionIndexAndV2HookMessage(t *testing.T) {
	v1 := `{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}
not json
{"type":"message","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":2}}
{"type":"compaction","timestamp":"2026-01-01T00:00:03.000Z","summary":"S","firstKeptEntryIndex":2,"tokensBefore":9}
`
	tr, rep, err := sessiontree.Import(testConfig(t), sessiontree.Identity{}, "a", "s", strings.NewReader(v1))
	require.NoError(t, err)
	require.Len(t, rep.Malformed, 1)
	es := tr.Entries()
	require.Len(t, es, 3)
	fk, ok := es[2].StringField("firstKeptEntryId")
	require.True(t, ok)
	require.Equal(t, es[1].ID(), fk) // index 2 = second entry (header = 0, bad line skipped)
	_, ok = es[2].Field("firstKeptEntryIndex")
	require.False(t, ok)
	c := tr.BuildContext()
	require.Len(t, c.Messages, 2)
	require.Contains(t, string(c.Messages[0]), "compactionSummary")
	require.Contains(t, string(c.Messages[1]), `"role":"assistant"`)

	v2 := `{"type":"session","version":2,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"hookMessage","customType":"h","content":"hi","display":true,"timestamp":1},"extra":{"k":1}}
`
	tr, _, err = sessiontree.Import(testConfig(t), sessiontree.Identity{}, "a", "s", strings.NewReader(v2))
	require.NoError(t, err)
	var w bytes.Buffer
	require.NoError(t, tr.Export(&w))
	require.Equal(t, `{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"custom","customType":"h","content":"hi","display":true,"timestamp":1},"extra":{"k":1}}
`, w.String())
}

func TestExport_V3RoundTripByteIdentical(t *testing.T) {
	in := readFixture(t, "pi-v3-browse-session.jsonl")
	tr, _ := importFixture(t, "pi-v3-browse-session.jsonl")
	var w bytes.Buffer
	require.NoError(t, tr.Export(&w))
	require.Equal(t, string(in), w.String())
}

// e builds a raw entry line.
func e(typ, id, parent, ts, rest string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	if rest != "" {
		rest = "," + rest
	}
	return fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":%q%s}`, typ, id, p, ts, rest)
}

func parseAll(t *testing.T, raws ...string) []sessiontree.Entry {
	t.Helper()
	out := make([]sessiontree.Entry, len(raws))
	for i, r := range raws {
		var err error
		out[i], err = sessiontree.ParseEntry([]byte(r))
		require.NoError(t, err, r)
	}
	return out
}

func TestBuildContextFrom_Table(t *testing.T) {
	const ts = "2026-01-01T00:00:00.000Z"
	m := func(id, parent, role string) string {
		return e("message", id, parent, ts, fmt.Sprintf(`"message":{"role":%q,"content":"%s","provider":"p%s","model":"m%s"}`, role, id, id, id))
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		entries []string
		leaf    *string
		want    string
	}{
		{"empty", nil, nil, `{"messages":[],"thinkingLevel":"off","model":null}`},
		{"null leaf", []string{m("a", "", "user")}, str(""), `{"messages":[],"thinkingLevel":"off","model":null}`},
		{"unknown leaf is active leaf", []string{m("a", "", "user")}, str("zz"), `{"messages":[{"role":"user","content":"a","provider":"pa","model":"ma"}],"thinkingLevel":"off","model":null}`},
		{"assistant sets model, later model_change wins",
			[]string{m("a", "", "assistant"), e("model_change", "b", "a", ts, `"provider":"X","modelId":"Y"`), e("thinking_level_change", "c", "b", ts, `"thinkingLevel":"high"`)},
			nil, `{"messages":[{"role":"assistant","content":"a","provider":"pa","model":"ma"}],"thinkingLevel":"high","model":{"provider":"X","modelId":"Y"}}`},
		{"branch: only the path",
			[]string{m("a", "", "user"), m("b", "a", "user"), m("c", "a", "user")},
			str("b"), `{"messages":[{"role":"user","content":"a","provider":"pa","model":"ma"},{"role":"user","content":"b","provider":"pb","model":"mb"}],"thinkingLevel":"off","model":null}`},
		{"leaf entry moves the leaf and is never on a path",
			[]string{m("a", "", "user"), m("b", "a", "user"), e("leaf", "L", "b", ts, `"targetId":"a"`)},
			nil, `{"messages":[{"role":"user","content":"a","provider":"pa","model":"ma"}],"thinkingLevel":"off","model":null}`},
		{"leaf entry with null target",
			[]string{m("a", "", "user"), e("leaf", "L", "a", ts, `"targetId":null`)},
			nil, `{"messages":[],"thinkingLevel":"off","model":null}`},
		{"custom_message with and without details, empty branch summary skipped",
			[]string{e("custom_message", "a", "", "2026-01-01T00:00:01.5Z", `"customType":"ext","content":[{"type":"text","text":"x"}],"display":false,"details":{"k":1}`),
				e("custom_message", "b", "a", ts, `"display":true,"customType":"ext","content":"y"`),
				e("branch_summary", "c", "b", ts, `"fromId":"a","summary":""`),
				e("branch_summary", "d", "c", ts, `"fromId":"a","summary":"went left","details":{}`),
				e("custom", "e", "d", ts, `"customType":"state","data":{}`)},
			nil, `{"messages":[{"role":"custom","customType":"ext","content":[{"type":"text","text":"x"}],"display":false,"details":{"k":1},"timestamp":1767225601500},{"role":"custom","customType":"ext","content":"y","display":true,"timestamp":1767225600000},{"role":"branchSummary","summary":"went left","fromId":"a","timestamp":1767225600000}],"thinkingLevel":"off","model":null}`},
		{"missing parent ends the path",
			[]string{m("b", "gone", "user"), m("c", "b", "user")},
			nil, `{"messages":[{"role":"user","content":"b","provider":"pb","model":"mb"},{"role":"user","content":"c","provider":"pc","model":"mc"}],"thinkingLevel":"off","model":null}`},
		{"cycle is cut",
			[]string{m("a", "b", "user"), m("b", "a", "user")},
			nil, `{"messages":[{"role":"user","content":"a","provider":"pa","model":"ma"},{"role":"user","content":"b","provider":"pb","model":"mb"}],"thinkingLevel":"off","model":null}`},
		{"compaction keeps from firstKeptEntryId, later compaction wins",
			[]string{m("a", "", "user"), m("b", "a", "assistant"), m("c", "b", "user"),
				e("compaction", "C1", "c", ts, `"summary":"one","firstKeptEntryId":"b","tokensBefore":10`),
				m("d", "C1", "user"),
				e("compaction", "C2", "d", ts, `"summary":"two","firstKeptEntryId":"c","tokensBefore":20`),
				m("f", "C2", "user")},
			nil, `{"messages":[{"role":"compactionSummary","summary":"two","tokensBefore":20,"timestamp":1767225600000},{"role":"user","content":"c","provider":"pc","model":"mc"},{"role":"user","content":"d","provider":"pd","model":"md"},{"role":"user","content":"f","provider":"pf","model":"mf"}],"thinkingLevel":"off","model":{"provider":"pb","modelId":"mb"}}`},
		{"firstKeptEntryId not on the path",
			[]string{m("a", "", "user"), e("compaction", "C", "a", ts, `"summary":"s","firstKeptEntryId":"nowhere","tokensBefore":1`), m("b", "C", "user")},
			nil, `{"messages":[{"role":"compactionSummary","summary":"s","tokensBefore":1,"timestamp":1767225600000},{"role":"user","content":"b","provider":"pb","model":"mb"}],"thinkingLevel":"off","model":null}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := sessiontree.BuildContextFrom(parseAll(t, tc.entries...), tc.leaf)
			require.Equal(t, tc.want, string(got.JSON()))
		})
	}
}
