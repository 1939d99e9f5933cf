package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// TestPi16Oracle_SystemMessage: pi.CurrentSystemMessage, the system message a
// SessionTree's compaction records, is byte for byte what Pi 1.6's
// getCurrentSystemMessage (@earendil-works/pi-ai) makes of 500 seeded lists of
// messages as a context holds them: system messages with string or block content, sections
// set, replaced and removed (integer-like names among them), tools added,
// redefined and removed, timestamps present or not, among other messages.
func TestPi16Oracle_SystemMessage(t *testing.T) {
	node := needPiPackage(t, pi16Package)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(16, 0x5157))
	lists := make([][]json.RawMessage, 500)
	for i := range lists {
		lists[i] = []json.RawMessage{}
		for range r.IntN(8) {
			lists[i] = append(lists[i], randomMessage(r))
		}
	}
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	data, err := json.Marshal(lists)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	script, err := filepath.Abs(filepath.Join(oracleDir, "pi16.mjs"))
	require.NoError(t, err)
	cmd := exec.Command(node, script, "system-message", in, out)
	cmd.Dir = oracleDir
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "Pi 1.6: %s", msg)
	data, err = os.ReadFile(out)
	require.NoError(t, err)
	var wants []*string
	require.NoError(t, json.Unmarshal(data, &wants))
	require.Len(t, wants, len(lists))
	made := 0
	for i, list := range lists {
		got := pi.CurrentSystemMessage(list)
		if wants[i] == nil {
			require.Nil(t, got, "list %d: %s", i, list)
			continue
		}
		made++
		require.Equal(t, *wants[i], string(got), "list %d: %s", i, list)
	}
	require.Greater(t, made, len(lists)/2)
}

// randomMessage is a system message (most often) or another message, drawn
// from r.
func randomMessage(r *rand.Rand) json.RawMessage {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	if r.IntN(4) == 0 {
		return json.RawMessage(pick(`{"role":"user","content":"hi","timestamp":1}`, `{"role":"assistant","content":[]}`, `{"role":"compactionSummary","summary":"s"}`))
	}
	var kv []string
	add := func(k, v string) { kv = append(kv, fmt.Sprintf("%q:%s", k, v)) }
	add("role", `"system"`)
	switch r.IntN(5) { // always a content, as in a context (Pi fails on none)
	case 0, 1:
		add("content", pick(`""`, `"be brief"`, `"use the tools"`))
	case 2:
		add("content", pick(`[{"type":"text","text":"one"},{"type":"image","data":"x"},{"type":"text","text":"two"}]`, `[]`, `[{"type":"text","text":""}]`))
	default:
		add("content", pick(`"You are Pi."`, `"more rules"`))
	}
	if r.IntN(2) == 0 {
		var ss []string
		for _, name := range []string{"preamble", "2", "rules", "10", "cwd"} {
			if r.IntN(3) == 0 {
				ss = append(ss, fmt.Sprintf("%q:%s", name, pick(`null`, `"<`+name+`>"`, `"<`+name+` again>"`)))
			}
		}
		add("sections", "{"+strings.Join(ss, ",")+"}")
	}
	tool := func() string {
		name := pick(`"read"`, `"bash"`, `"edit"`, `"read"`)
		return fmt.Sprintf(`{"name":%s,"description":%s,"parameters":{"type":"object"}}`, name, pick(`"v1"`, `"v2"`))
	}
	if r.IntN(3) == 0 {
		add("toolsAdded", "["+tool()+","+tool()+"]")
	}
	if r.IntN(4) == 0 {
		add("toolsRemoved", `[{"name":`+pick(`"read"`, `"bash"`, `"gone"`)+`}]`)
	}
	if r.IntN(5) > 0 {
		add("timestamp", pick(`0`, `1790375335488`, `null`))
	}
	return json.RawMessage("{" + strings.Join(kv, ",") + "}")
}
