package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// twoMachinesScript drives Pi 1.6's SessionManager for TestFollowPi16_TwoMachines:
//
//	create DIR CWD              a new session in DIR, one turn; prints its file
//	append FILE DIR TAG N       N more turns; prints the last entry's id
//	look FILE DIR LEAF          prints {ids, context}: every entry id of the
//	                            file and the context Pi builds at LEAF
const twoMachinesScript = `
import { SessionManager } from %q;
const [mode, file, dir, a, b] = process.argv.slice(2);
const turn = (sm, text) => {
	sm.appendMessage({ role: "user", content: text + " asks", timestamp: 1767225600000 });
	return sm.appendMessage({ role: "assistant", content: [{ type: "text", text: text + " answers" }], api: "openai-completions",
		provider: "ollama", model: "qwen3:1.7b", stopReason: "stop", timestamp: 1767225600000,
		usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } });
};
if (mode === "create") {
	const sm = SessionManager.create(dir, file);
	turn(sm, "start");
	console.log(sm.getSessionFile());
} else if (mode === "append") {
	const sm = SessionManager.open(file, dir);
	let last;
	for (let i = 0; i < Number(b); i++) last = turn(sm, a + i);
	console.log(last);
} else if (mode === "look") {
	const sm = SessionManager.open(file, dir);
	sm.branch(a);
	console.log(JSON.stringify({ ids: sm.getEntries().map((e) => e.id), context: sm.buildSessionContext() }));
}
`

// TestFollowPi16_TwoMachines: two machines hold copies of one Pi session (a
// ~/.pi copied from one to the other) and go on with it apart, each with a
// follower of its own (state directories of their own) uploading at the same
// time. The bucket holds the union: restore --layout pi on a third machine
// gives one file that Pi 1.6 opens with every entry of both, and at each
// machine's last entry Pi builds the context that machine's own file gives.
func TestFollowPi16_TwoMachines(t *testing.T) {
	node := needPiPackage(t, pi16Package)
	tmp := t.TempDir()
	sessions, err := filepath.Abs(filepath.Join(oracleDir, "pi16-sessions.mjs"))
	require.NoError(t, err)
	script := filepath.Join(tmp, "two-machines.mjs")
	require.NoError(t, os.WriteFile(script, []byte(strings.Replace(twoMachinesScript, "%q", `"`+sessions+`"`, 1)), 0o644))
	pi := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), node, append([]string{script}, args...)...).Output()
		require.NoError(t, err, "node %v", args)
		return strings.TrimSpace(string(out))
	}
	look := func(file, leaf string) (ids []string, context json.RawMessage) {
		t.Helper()
		var v struct {
			IDs     []string        `json:"ids"`
			Context json.RawMessage `json:"context"`
		}
		require.NoError(t, json.Unmarshal([]byte(pi("look", file, filepath.Dir(file), leaf)), &v))
		return v.IDs, v.Context
	}

	for _, b := range []backend{fileBackend(), s3Backend()} {
		t.Run(b.name, func(t *testing.T) {
			store, dir := b.fresh(t), t.TempDir()
			root := map[string]string{"a": filepath.Join(dir, "a", "sessions"), "b": filepath.Join(dir, "b", "sessions")}
			follow := func(machines ...string) {
				t.Helper()
				var wg sync.WaitGroup
				results := make([]result, len(machines))
				for i, m := range machines {
					wg.Go(func() {
						results[i] = cli(t, "follow", "--once", "--store", store, "--state-dir", filepath.Join(dir, m, "state"), root[m])
					})
				}
				wg.Wait()
				for i, r := range results {
					require.Equal(t, 0, r.code, "follow on %s: %s%s", machines[i], r.stdout, r.stderr)
				}
			}
			fileA := pi("create", filepath.Join(root["a"], "--work-project--"), "/work/project")
			follow("a")
			require.NoError(t, os.CopyFS(root["b"], os.DirFS(root["a"])))
			fileB := filepath.Join(root["b"], "--work-project--", filepath.Base(fileA))
			leafA := pi("append", fileA, filepath.Dir(fileA), "machine a", "3")
			leafB := pi("append", fileB, filepath.Dir(fileB), "machine b", "2")
			follow("a", "b")

			out := filepath.Join(dir, "c", "sessions")
			r := cli(t, "restore", "--layout", "pi", "--store", store, "--out", out)
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			restored := filepath.Join(out, "--work-project--", filepath.Base(fileA))
			idsA, contextA := look(fileA, leafA)
			idsB, contextB := look(fileB, leafB)
			ids, context := look(restored, leafA)
			union := slices.Compact(slices.Sorted(slices.Values(append(idsA, idsB...))))
			require.ElementsMatch(t, union, ids, "the restored file holds both machines' entries")
			require.Len(t, ids, len(idsA)+len(idsB)-2, "one shared turn")
			require.JSONEq(t, string(contextA), string(context), "machine a's branch")
			_, context = look(restored, leafB)
			require.JSONEq(t, string(contextB), string(context), "machine b's branch")
		})
	}
}
