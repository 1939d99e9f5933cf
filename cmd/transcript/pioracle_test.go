package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// Pi as the oracle
//
// TestPiOracle asks Pi 0.58's own code (its SessionManager, from the npm package
// pinned in testdata/pioracle; `npm ci` there installs it, as .ci/run does) for the
// context of many session files, and requires `transcript context` to print the
// same bytes: from the file (--file), and from the store after `transcript
// import`; and Pi must build the same context again from the export and from
// the context file a restore writes. Sixty files are written by Pi itself through
// its API. The others come from a seeded generator that writes them the way Pi
// does (one JSON.stringify line per entry), over every entry type, branches,
// compactions whose kept entry is on the path, off it or unknown, v1 and v2
// files that need migrating, explicit leaves, a harness's "leaf" entries (Pi is
// asked at their target); and a share of them carry what a
// hand-edited or foreign file may: other timestamp forms and settings, a byte
// order mark, CRLF line ends, blank and malformed lines (imported with
// --skip-malformed), a torn last line, no final newline. None holds an entry
// type or field that Pi 1.6 added (a fixture that does is left to
// TestPi16Oracle, as the store follows Pi 1.6 where the two differ).

// oracleDir is the npm project that holds Pi's package.
const oracleDir = "testdata/pioracle"

// oracleTZ is the time zone Pi and `transcript` both run in: not UTC, so that a
// timestamp without a zone is read as local time, and without daylight saving
// time, so that no generated local time falls into a gap or an overlap where
// the two might choose differently.
const oracleTZ = "TZ=Asia/Kolkata"

// oracleCLI runs `transcript` in oracleTZ.
func oracleCLI(t *testing.T, args ...string) result {
	t.Helper()
	return cliWith(t, cmdOpts{env: []string{oracleTZ}}, args...)
}

// piCase is one session file for the oracle: the file, the leaf to build the
// context at ("" for the active leaf), and where Pi writes its answer.
type piCase struct {
	File string `json:"file"`
	// Leaf is where Pi builds the context: an entry id, "" for the last
	// entry, or with NullLeaf set Pi's null leaf (no messages).
	Leaf       string `json:"leaf"`
	NullLeaf   bool   `json:"nullLeaf"`
	Out        string `json:"out"`
	SessionDir string `json:"sessionDir"`
	// ourLeaf is the --leaf given to `transcript context` ("" for the active
	// leaf). It differs from Leaf where the file ends in a "leaf" entry (which
	// Pi does not know): the store takes its target as the active leaf, and Pi
	// is asked at that target.
	ourLeaf string
	// ours is the file `transcript` reads (Pi rewrites File when it migrates it).
	ours string
	// malformed: a line of the file is not an entry (import refuses the file
	// without --skip-malformed).
	malformed bool
}

// needPi returns the path of node once Pi 0.58's package is installed in
// oracleDir; without them the test skips, and fails in CI.
func needPi(t *testing.T) string {
	t.Helper()
	return needPiPackage(t, "@mariozechner/pi-coding-agent")
}

// needPiPackage returns the path of node once the npm package pkg is installed
// in oracleDir; without them the test skips, and fails in CI.
func needPiPackage(t *testing.T, pkg string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(oracleDir, "node_modules", filepath.FromSlash(pkg))); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed in %s (run npm ci there): %v", pkg, oracleDir, err)
		}
		t.Skipf("%s is not installed: run `npm ci` in cmd/transcript/%s", pkg, oracleDir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node: %v", err)
		}
		t.Skip("node is not installed")
	}
	return node
}

func TestPiOracle(t *testing.T) {
	node := needPi(t)
	dir := t.TempDir()
	var cases []piCase
	add := func(name string, f genFile) {
		c := piCase{malformed: f.malformed, ourLeaf: f.leaf, Leaf: f.piLeaf, NullLeaf: f.nullLeaf,
			File: filepath.Join(dir, name+".pi.jsonl"),
			Out:  filepath.Join(dir, name+".pi.json"), SessionDir: filepath.Join(dir, "pi-sessions"),
			ours: filepath.Join(dir, name+".jsonl"),
		}
		require.NoError(t, os.WriteFile(c.File, f.data, 0o644))
		require.NoError(t, os.WriteFile(c.ours, f.data, 0o644))
		cases = append(cases, c)
	}
	fixtures, err := filepath.Glob("../../sessiontree/testdata/pi-*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	for _, f := range fixtures {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if holdsPi16Entries(t, data) {
			continue // Pi 0.58 does not know them: TestPi16Oracle asks Pi 1.6
		}
		add(strings.TrimSuffix(filepath.Base(f), ".jsonl"), genFile{data: data})
	}
	const n = 240
	for seed := range uint64(n) {
		g := newSessionGen(seed)
		add(fmt.Sprintf("gen-%03d", seed), g.file())
	}
	// Sessions Pi itself wrote through its API; every other one asked at an
	// entry of its own.
	for i, path := range piMade(t, node, filepath.Join(dir, "pi-made"), 60) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		leaf := ""
		if i%2 == 1 {
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			var e struct{ ID string }
			require.NoError(t, json.Unmarshal([]byte(lines[1+i%(len(lines)-1)]), &e))
			leaf = e.ID
		}
		add(fmt.Sprintf("pi-made-%02d", i), genFile{data: data, leaf: leaf, piLeaf: leaf})
	}
	askPi(t, node, dir, "cases.json", cases)

	store := "file://" + filepath.Join(dir, "store")
	var exports []piCase
	wants := map[string]string{}
	for i, c := range cases {
		name := strings.TrimSuffix(filepath.Base(c.ours), ".jsonl")
		want, err := os.ReadFile(c.Out)
		require.NoError(t, err)
		require.NotContains(t, string(want), "ERROR", "%s: Pi failed", name)
		args := []string{"context", "--file", c.ours}
		if c.ourLeaf != "" {
			args = append(args, "--leaf", c.ourLeaf)
		}
		r := oracleCLI(t, args...)
		require.Equal(t, 0, r.code, "%s: %s", name, r.stderr)
		require.Equal(t, string(want)+"\n", r.stdout, "%s (--file %s, leaf %q): the context Pi builds", name, c.ours, c.ourLeaf)

		// The same session imported into the store: the context read back
		// from its segments. (Every third case, and every damaged one: an
		// import costs three runs.)
		if i%3 != 0 && !c.malformed {
			continue
		}
		sel := []string{"--store", store, "--agent", "oracle", "--session", fmt.Sprintf("s%d", i)}
		// A session whose file names a parent it lacks reads back whole, as
		// Pi reads it, but the commands cannot tell that from a segment lost
		// from the bucket: each warns, naming the parent.
		ours, err := os.ReadFile(c.ours)
		require.NoError(t, err)
		dangling := strings.Contains(string(ours), `"parentId":"deadbeef"`)
		requireRead := func(r result, what string) {
			t.Helper()
			require.Equal(t, 0, r.code, "%s: %s: %s", name, what, r.stderr)
			if dangling {
				require.Contains(t, r.stderr, `no segment`, "%s: %s", name, what)
				require.Contains(t, r.stderr, `"deadbeef"`, "%s: %s", name, what)
			}
		}
		r = oracleCLI(t, append(append([]string{"import"}, sel...), c.ours)...)
		if c.malformed {
			// Where Pi skips the line, import refuses the file and says why,
			// unless told to skip it too.
			require.Equal(t, 1, r.code, "%s: import: %s", name, r.stderr)
			require.Contains(t, r.stderr, "malformed line")
			require.Contains(t, r.stderr, "--skip-malformed")
			r = oracleCLI(t, append(append([]string{"import", "--skip-malformed"}, sel...), c.ours)...)
			require.Contains(t, r.stdout, "\t1 skipped", "%s: %s", name, r.stderr)
		}
		require.Equal(t, 0, r.code, "%s: import: %s", name, r.stderr)
		args = append([]string{"context"}, sel...)
		if c.ourLeaf != "" {
			args = append(args, "--leaf", c.ourLeaf)
		}
		r = oracleCLI(t, args...)
		requireRead(r, "context")
		require.Equal(t, string(want)+"\n", r.stdout, "%s (imported, leaf %q): the context Pi builds", name, c.ourLeaf)

		// Its export opens in Pi with the same context.
		exported := filepath.Join(dir, name+".export.jsonl")
		r = oracleCLI(t, append([]string{"export", "--out", exported}, sel...)...)
		requireRead(r, "export")
		exports = append(exports, piCase{File: exported, Leaf: c.Leaf, NullLeaf: c.NullLeaf, Out: exported + ".pi.json", SessionDir: c.SessionDir})
		wants[exported] = string(want)

		// And so does the context file a restore writes (Pi opens it as a
		// session file; it holds what the model still needs at the active
		// leaf, so only the active leaf is asked).
		if c.ourLeaf != "" {
			continue
		}
		out := filepath.Join(dir, "restored", name)
		r = oracleCLI(t, append([]string{"restore", "--out", out}, sel...)...)
		requireRead(r, "restore")
		contextFile := sessiontree.FilesOf(out, transcript.TranscriptRef{AgentID: "oracle", SessionID: sel[len(sel)-1]}).Context
		exports = append(exports, piCase{File: contextFile, Leaf: c.Leaf, NullLeaf: c.NullLeaf, Out: contextFile + ".pi.json", SessionDir: c.SessionDir})
		wants[contextFile] = string(want)
	}
	require.NotEmpty(t, exports)
	askPi(t, node, dir, "exports.json", exports)
	for _, c := range exports {
		got, err := os.ReadFile(c.Out)
		require.NoError(t, err)
		require.Equal(t, wants[c.File], string(got), "%s: Pi's context of this file (an export or a restored context file), against its context of the imported file", c.File)
	}
}

// piMade has Pi write n sessions under dir through its own API
// (testdata/pioracle/context.mjs) and returns their files.
func piMade(t *testing.T, node, dir string, n int) []string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join(oracleDir, "context.mjs"))
	require.NoError(t, err)
	cmd := exec.Command(node, script, "make", strconv.Itoa(n), "20261201", dir)
	cmd.Dir = oracleDir
	cmd.Env = append(os.Environ(), oracleTZ)
	out, err := cmd.Output()
	require.NoError(t, err, "Pi: %s", out)
	files := strings.Fields(string(out))
	require.Len(t, files, n)
	return files
}

// askPi has Pi 0.58 write its context of each case (testdata/pioracle/context.mjs).
func askPi(t *testing.T, node, dir, name string, cases []piCase) {
	t.Helper()
	askPiWith(t, node, "context.mjs", dir, name, cases)
}

// askPiWith has the Pi of script (in testdata/pioracle: context.mjs for Pi 0.58,
// pi16.mjs for Pi 1.6) write its context of each case.
func askPiWith(t *testing.T, node, script, dir, name string, cases []piCase) {
	t.Helper()
	list, err := json.Marshal(cases)
	require.NoError(t, err)
	listFile := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(listFile, list, 0o644))
	script, err = filepath.Abs(filepath.Join(oracleDir, script))
	require.NoError(t, err)
	cmd := exec.Command(node, script, "context", listFile)
	cmd.Dir = oracleDir
	cmd.Env = append(os.Environ(), oracleTZ)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "Pi: %s", out)
}

// sessionGen makes one random session file, the way Pi writes it.
type sessionGen struct {
	r *rand.Rand
	// odd makes the file carry what a hand-edited or foreign file may.
	odd     bool
	version int
	t       time.Time
	ids     []string
}

func newSessionGen(seed uint64) *sessionGen {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	g := &sessionGen{r: r, odd: r.IntN(4) == 0, version: 3,
		t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(300 * 24 * time.Hour))))}
	switch r.IntN(8) {
	case 0:
		g.version = 1
	case 1:
		g.version = 2
	}
	return g
}

func (g *sessionGen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *sessionGen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// jsString writes s as JSON.stringify does: only '"', '\\' and control
// characters escaped, the short forms where JSON has them.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteRune(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// obj writes a JSON object with its keys in the given order (k1, v1, k2, v2, ...);
// values are already JSON.
func obj(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsString(kv[i]))
		b.WriteByte(':')
		b.WriteString(kv[i+1])
	}
	b.WriteByte('}')
	return b.String()
}

func arr(vs ...string) string { return "[" + strings.Join(vs, ",") + "]" }

func (g *sessionGen) text() string {
	s := pick(g, "hello", "list the files", "ok, done.", "two\nlines", `a "quote" and a \ backslash`,
		"tab\there", "unicode é ü 日本", "emoji 🎉", "<html> & </html>", "")
	if g.odd && g.chance(0.2) {
		s += pick(g, "\u2028", "\u2029", "\x00", "\x1f", "\x7f", "\b\f")
	}
	return s
}

func (g *sessionGen) blocks() string {
	var bs []string
	for range 1 + g.r.IntN(3) {
		switch g.r.IntN(5) {
		case 0, 1, 2:
			bs = append(bs, obj("type", `"text"`, "text", jsString(g.text())))
		case 3:
			bs = append(bs, obj("type", `"thinking"`, "thinking", jsString(g.text())))
		default:
			bs = append(bs, obj("type", `"toolCall"`, "id", jsString(fmt.Sprintf("call_%d", g.r.IntN(99))),
				"name", `"bash"`, "arguments", obj("command", `"ls -la"`, "n", pick(g, "1", "2.5", "123456789012", "-7"))))
		}
	}
	return arr(bs...)
}

func (g *sessionGen) content() string {
	if g.chance(0.5) {
		return jsString(g.text())
	}
	return g.blocks()
}

// timestamp is the entry's "timestamp" value: Date.toISOString, or in an odd
// file sometimes another form JavaScript's Date reads (or cannot).
func (g *sessionGen) timestamp() (string, bool) {
	iso := g.t.Format("2006-01-02T15:04:05.000Z")
	if !g.odd || !g.chance(0.2) {
		return jsString(iso), true
	}
	switch g.r.IntN(12) {
	case 0:
		return jsString(g.t.Format(time.RFC3339)), true
	case 1:
		return jsString(g.t.In(time.FixedZone("", 2*3600)).Format("2006-01-02T15:04:05.000-07:00")), true
	case 2:
		return jsString(g.t.Format("2006-01-02")), true
	case 3:
		return jsString(g.t.Format("2006-01-02T15:04:05")), true // local time
	case 4:
		return jsString(g.t.Format("2006-01-02T15:04:05.123456Z")), true
	case 5:
		return jsString("not a date"), true
	case 6:
		return strconv.FormatInt(g.t.UnixMilli(), 10), true
	case 7:
		return "null", true
	case 8:
		return jsString(g.t.Format("2006-01-02 15:04:05Z")), true
	case 9:
		return jsString(g.t.Format("2006-01-02T15:04:05.000-0700")), true
	case 10:
		return "", false
	default:
		return jsString(g.t.Format("2006-01")), true
	}
}

func (g *sessionGen) message(ms string) string {
	roles := []string{"user", "assistant", "assistant", "toolResult", "bashExecution", "custom"}
	if g.version == 2 {
		roles = append(roles, "hookMessage")
	}
	switch role := pick(g, roles...); role {
	case "user":
		return obj("role", `"user"`, "content", g.content(), "timestamp", ms)
	case "assistant":
		kv := []string{"role", `"assistant"`, "content", g.blocks(), "api", `"openai-completions"`,
			"provider", jsString(pick(g, "ollama", "anthropic")), "model", jsString(pick(g, "qwen3:1.7b", "claude-sonnet-4")),
			"usage", obj("input", strconv.Itoa(g.r.IntN(999)), "output", "3", "cacheRead", "0", "cacheWrite", "0", "totalTokens", "5",
				"cost", obj("input", "0", "output", "0.0001", "total", "0.0001")),
			"stopReason", `"stop"`, "timestamp", ms}
		if g.chance(0.1) {
			kv = append(kv, "errorMessage", `"boom"`)
		}
		if g.odd && g.chance(0.15) {
			kv = g.oddSetting(kv, pick(g, "provider", "model"))
		}
		return obj(kv...)
	case "toolResult":
		kv := []string{"role", `"toolResult"`, "toolCallId", `"call_1"`, "toolName", `"bash"`,
			"content", arr(obj("type", `"text"`, "text", jsString(g.text()))), "isError", pick(g, "true", "false", "false")}
		if g.chance(0.3) {
			kv = append(kv, "details", obj("exit", "0"))
		}
		return obj(append(kv, "timestamp", ms)...)
	case "bashExecution":
		return obj("role", `"bashExecution"`, "command", `"ls"`, "output", jsString(g.text()), "exitCode", "0",
			"cancelled", "false", "truncated", "false", "timestamp", ms)
	default:
		return obj("role", jsString(role), "customType", `"note"`, "content", g.content(), "display", "true", "timestamp", ms)
	}
}

// entry makes entry i (id, parent) of the file.
func (g *sessionGen) entry(i int, id, parent string) string {
	kv := []string{"type", ""}
	if g.version >= 2 {
		kv = append(kv, "id", jsString(id), "parentId", parent)
	}
	if ts, ok := g.timestamp(); ok {
		kv = append(kv, "timestamp", ts)
	}
	ms := strconv.FormatInt(g.t.UnixMilli(), 10)
	var typ string
	switch k := g.r.IntN(100); {
	case k < 55:
		typ = "message"
		kv = append(kv, "message", g.message(ms))
	case k < 60:
		typ = "thinking_level_change"
		kv = append(kv, "thinkingLevel", jsString(pick(g, "off", "low", "medium", "high")))
		if g.odd && g.chance(0.3) {
			kv = g.oddSetting(kv, "thinkingLevel")
		}
	case k < 64:
		typ = "model_change"
		kv = append(kv, "provider", `"openai"`, "modelId", jsString(pick(g, "gpt-5", "gpt-4o")))
		if g.odd && g.chance(0.3) {
			kv = g.oddSetting(kv, pick(g, "provider", "modelId"))
		}
	case k < 66:
		typ = "active_tools_change"
		kv = append(kv, "activeToolNames", arr(`"bash"`, `"read"`))
	case k < 74:
		typ = "compaction"
		kv = append(kv, "summary", jsString(g.text()))
		if g.version == 1 {
			kv = append(kv, "firstKeptEntryIndex", strconv.Itoa(g.r.IntN(i+2)))
		} else {
			kept := "nothere1"
			if len(g.ids) > 0 && g.chance(0.9) {
				kept = pick(g, g.ids...)
			}
			kv = append(kv, "firstKeptEntryId", jsString(kept))
		}
		kv = append(kv, "tokensBefore", strconv.Itoa(100+g.r.IntN(99999)))
		if g.chance(0.3) {
			kv = append(kv, "details", obj("readFiles", arr(`"a.go"`)))
		}
		if g.chance(0.2) {
			kv = append(kv, "fromHook", pick(g, "true", "false"))
		}
	case k < 79:
		typ = "branch_summary"
		from := "root"
		if len(g.ids) > 0 {
			from = pick(g, g.ids...)
		}
		kv = append(kv, "fromId", jsString(from), "summary", jsString(pick(g, "", g.text())))
		if g.chance(0.3) {
			kv = append(kv, "details", obj("x", "1"))
		}
	case k < 82:
		typ = "custom"
		kv = append(kv, "customType", `"ext"`, "data", obj("k", arr("1", "2")))
	case k < 90:
		typ = "custom_message"
		kv = append(kv, "customType", `"ext-msg"`, "content", g.content())
		if g.chance(0.7) {
			kv = append(kv, "display", pick(g, "true", "false"))
		}
		if g.chance(0.4) {
			kv = append(kv, "details", pick(g, obj("a", "1"), "null", arr("1"), `"x"`))
		}
	case k < 94:
		typ = "label"
		target := id
		if len(g.ids) > 0 {
			target = pick(g, g.ids...)
		}
		kv = append(kv, "targetId", jsString(target))
		if g.chance(0.7) {
			kv = append(kv, "label", `"bookmark"`)
		}
	case k < 97:
		typ = "session_info"
		kv = append(kv, "name", `"my session"`)
	default:
		typ = "some_future_type"
		kv = append(kv, "payload", obj("z", "true"))
	}
	kv[1] = jsString(typ)
	return obj(kv...)
}

// oddSetting removes key from the object kv, or gives it a value that is not a
// string: Pi copies settings as they are.
func (g *sessionGen) oddSetting(kv []string, key string) []string {
	for i := 0; i < len(kv); i += 2 {
		if kv[i] != key {
			continue
		}
		if v := pick(g, "", "null", "7", `{"x":1}`); v != "" {
			kv[i+1] = v
			return kv
		}
		return append(kv[:i:i], kv[i+2:]...)
	}
	return kv
}

// genFile is one generated session file and where to ask for its context.
type genFile struct {
	data []byte
	// leaf is the --leaf for `transcript context` ("" for the active leaf).
	leaf string
	// piLeaf and nullLeaf are where Pi is asked (see piCase.Leaf).
	piLeaf   string
	nullLeaf bool
	// malformed: a line of it is not an entry.
	malformed bool
}

// file returns a session file. A version 3 file may hold the "leaf" entries with
// which a harness records a move of the active leaf (docs/ENTRIES.md): the next
// entry is appended under the target, and a file that ends in one has the target
// (or Pi's null leaf) as its active leaf.
func (g *sessionGen) file() (f genFile) {
	hdr := []string{"type", `"session"`}
	if g.version > 1 {
		hdr = append(hdr, "version", strconv.Itoa(g.version))
	}
	hdr = append(hdr, "id", jsString(fmt.Sprintf("0193e1d2-%04x-7000-8000-%012x", g.r.IntN(1<<16), g.r.Int64N(1<<48))),
		"timestamp", jsString(g.t.Format("2006-01-02T15:04:05.000Z")), "cwd", `"/work/project"`)
	lines := []string{obj(hdr...)}
	last := "null" // the active leaf, as JSON
	endsInLeaf := false
	for i := range 1 + g.r.IntN(40) {
		g.t = g.t.Add(time.Duration(500+g.r.IntN(5000)) * time.Millisecond)
		id := fmt.Sprintf("%08x", g.r.Uint32())
		if g.version == 3 && len(g.ids) > 0 && g.chance(0.1) {
			target := "null"
			if g.chance(0.9) {
				target = jsString(pick(g, g.ids...))
			}
			kv := []string{"type", `"leaf"`, "id", jsString(id), "parentId", last}
			if ts, ok := g.timestamp(); ok {
				kv = append(kv, "timestamp", ts)
			}
			lines = append(lines, obj(append(kv, "targetId", target)...))
			last, endsInLeaf = target, true
			continue
		}
		parent := last
		switch k := g.r.IntN(100); {
		case k < 15 && len(g.ids) > 0:
			parent = jsString(pick(g, g.ids...))
		case k < 17:
			parent = "null"
		case k < 19 && g.odd:
			parent = `"deadbeef"` // a parent the file does not hold
		}
		lines = append(lines, g.entry(i, id, parent))
		g.ids = append(g.ids, id)
		last, endsInLeaf = jsString(id), false
	}
	switch {
	case g.version == 3 && g.chance(0.3):
		f.leaf = pick(g, g.ids...)
		f.piLeaf = f.leaf
	case endsInLeaf && last == "null":
		f.nullLeaf = true
	case endsInLeaf:
		f.piLeaf, _ = strconv.Unquote(last)
	}
	sep, end := "\n", "\n"
	var prefix string
	if g.odd {
		switch g.r.IntN(6) {
		case 0:
			prefix = "\xef\xbb\xbf"
		case 1:
			sep, end = "\r\n", "\r\n"
		case 2:
			end = ""
		case 3:
			at := 1 + g.r.IntN(len(lines))
			// Only lines JSON.parse refuses: Pi keeps a JSON line that is not an
			// entry (docs/ENTRIES.md: the store skips it).
			bad := pick(g, "", "   ", "{not json", `{"type":"message","id":`)
			f.malformed = strings.TrimSpace(bad) != ""
			lines = append(lines[:at], append([]string{bad}, lines[at:]...)...)
		case 4:
			// A crash tore the last line: half of another entry, no newline.
			last := lines[len(lines)-1]
			lines, end, f.malformed = append(lines, last[:len(last)/2]), "", true
		}
	}
	f.data = []byte(prefix + strings.Join(lines, sep) + end)
	return f
}
