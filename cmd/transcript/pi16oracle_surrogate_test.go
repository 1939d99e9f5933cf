package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPi16Oracle_LoneSurrogateIDs: ids that are JSON escapes of lone UTF-16
// surrogates ("\ud800", "\udc00") are two entries for Pi, distinct from
// "\ufffd" and from the pair "\ud800\udc00" (U+10000); the store decoded each
// lone surrogate as U+FFFD, so that three entries of the file below had one id
// (two were dropped as conflicts, and the compaction kept the wrong first
// entry). Pi 1.6 builds the context of the file; the store must build the same
// through every path TestPi16Oracle takes (the file, a SessionTree, import,
// compaction, restore, export), and verify must find nothing wrong.
// Strings Pi writes back (a compaction's summary, a custom message's content)
// hold a lone surrogate too: JSON.stringify writes it as its escape.
func TestPi16Oracle_LoneSurrogateIDs(t *testing.T) {
	node := needPiPackage(t, pi16Package)
	ctx := context.Background()
	dir := t.TempDir()
	usage := `"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`
	user := func(id, parent, sec, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":` + parent + `,"timestamp":"2026-01-01T00:00:` + sec + `.000Z",` +
			`"message":{"role":"user","content":"` + text + `","timestamp":17672256` + sec + `000}}`
	}
	lines := []string{
		`{"type":"session","version":3,"id":"surrogates","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`,
		user(`\ud800`, `null`, "01", `one \ud800`),
		`{"type":"message","id":"\udc00","parentId":"\ud800","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant",` +
			`"content":[{"type":"text","text":"two"}],"api":"openai-completions","provider":"openai","model":"gpt-4o",` + usage +
			`,"stopReason":"stop","timestamp":1767225602000}}`,
		user(`x`, `"\ud800"`, "03", "a branch off \\ud800"),
		`{"type":"custom_message","id":"\ufffd","parentId":"\udc00","timestamp":"2026-01-01T00:00:04.000Z","customType":"note","content":"lone \udc00","display":true}`,
		user(`\ud800\udc00`, `"\ufffd"`, "05", "three"),
		`{"type":"compaction","id":"k","parentId":"\ud800\udc00","timestamp":"2026-01-01T00:00:06.000Z","summary":"summed \ud800","firstKeptEntryId":"\udc00","tokensBefore":100}`,
		user(`after`, `"k"`, "07", "four"),
	}
	data := []byte(strings.Join(lines, "\n") + "\n")
	file := filepath.Join(dir, "surrogates.jsonl")
	require.NoError(t, os.WriteFile(file, data, 0o644))
	piFile := filepath.Join(dir, "surrogates.pi.jsonl") // Pi may rewrite the file it opens
	require.NoError(t, os.WriteFile(piFile, data, 0o644))
	out := filepath.Join(dir, "surrogates.pi.json")
	askPiWith(t, node, "pi16.mjs", dir, "surrogates-list.json",
		[]piCase{{File: piFile, Out: out, SessionDir: filepath.Join(dir, "pi-sessions")}})
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NotContains(t, string(want), "ERROR")
	for _, w := range []string{`"summary":"summed \ud800"`, `"text":"two"`, `"content":"lone \udc00"`, `"content":"three"`, `"content":"four"`} {
		require.Contains(t, string(want), w, "Pi's context keeps the entries from the first kept one (\\udc00)")
	}
	require.NotContains(t, string(want), `one \ud800`, "the compaction kept the entries from \\udc00, not \\ud800")

	o := pi16Check{dir: dir, name: "surrogates", s: pi16Session{File: file}}
	o.s.Checks = append(o.s.Checks, struct {
		Leaf    string `json:"leaf"`
		Context string `json:"context"`
	}{Context: string(want)})
	o.file(t)
	o.sessionTree(t, ctx)
	storeDir := filepath.Join(dir, "store")
	o.storeTrip(t, ctx, fileStore(t, storeDir), storeDir)
	require.Contains(t, ok(t, "verify", "--store", "file://"+storeDir), "0 problems in")
}
