package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
)

// cliSchema is the document describing every command's --json output.
const cliSchema = "../../docs/cli-json.schema.json"

// jsonRun is one command run with --json and the definition its output follows.
type jsonRun struct {
	def     string // $defs entry of cliSchema
	bin     string // "" for transcript
	args    []string
	stdin   string
	listing bool // one object per line (else one object, one line)
	lines   int  // for a listing, how many lines at least
}

func TestJSON_File(t *testing.T) { testJSONSchema(t, fileBackend()) }

func TestJSON_MinIO(t *testing.T) { testJSONSchema(t, s3Backend()) }

// testJSONSchema: every --json output of every command is the shape
// docs/cli-json.schema.json gives it: one object per line for a listing, one
// object on one line for a summary.
func testJSONSchema(t *testing.T, b backend) {
	v3 := fixture(t, fixtureV3)
	store := b.fresh(t)
	outbox := stuckOutbox(t)
	root, _ := piRoot(t)
	st := []string{"--store", store}
	runs := []jsonRun{
		{def: "transcript.import", args: append([]string{"import", "--json", "--agent", "a", "--session", "imported"}, append(st, v3)...)},
		{def: "transcript.import", args: append([]string{"import", "--json", "--agent", "a", "--session", "imported"}, append(st, v3)...)},
		{def: "transcript.append", args: append([]string{"append", "--json", "--agent", "a", "--session", "appended"}, st...),
			stdin: headerLine("appended") + "\n" + entryLine("e1", "") + "\n"},
		{def: "transcript.demo", args: append([]string{"demo", "--json", "--replicas", "2", "--turns", "1"}, st...)},
		{def: "transcript.ls", args: append([]string{"ls", "--json"}, st...), listing: true, lines: 3},
		{def: "transcript.ls-segments", args: append([]string{"ls", "--json", "--segments"}, st...), listing: true, lines: 3},
		{def: "transcript.verify", args: append([]string{"verify", "--json"}, st...)},
		{def: "transcript.stats", args: append([]string{"stats", "--json"}, st...)},
		{def: "transcript.restore", args: append([]string{"restore", "--json", "--out", t.TempDir()}, st...)},
		{def: "transcript.restore", args: append([]string{"restore", "--json", "--layout", "pi", "--out", t.TempDir()}, st...)},
		{def: "transcript.follow", args: append([]string{"follow", "--json", "--once", "--state-dir", t.TempDir()}, append(st, root)...), listing: true, lines: 3},
		{def: "transcript-compact", bin: "transcript-compact", args: append([]string{"--json", "--min-segments", "2"}, st...)},
		{def: "transcript.outbox", args: []string{"outbox", "--json", outbox}, listing: true, lines: 1},
		{def: "transcript.outbox-release", args: []string{"outbox", "--json", "--release", "default/coder/s1", outbox}},
	}
	compiler := jsonschema.NewCompiler()
	compiler.AssertFormat()
	for _, r := range runs {
		t.Run(strings.Join(append([]string{r.def}, r.args[:min(2, len(r.args))]...), " "), func(t *testing.T) {
			sch, err := compiler.Compile(cliSchema + "#/$defs/" + r.def)
			require.NoError(t, err)
			bin := binary
			if r.bin != "" {
				bin = builtBinary(t, r.bin)
			}
			res := runBinary(t, bin, r.stdin, r.args...)
			require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
			out := strings.TrimSuffix(res.stdout, "\n")
			lines := strings.Split(out, "\n")
			if r.listing {
				require.GreaterOrEqual(t, len(lines), r.lines, out)
			} else {
				require.Len(t, lines, 1, "a summary is one line: %s", out)
			}
			for _, line := range lines {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(line)))
				require.NoError(t, err, line)
				require.NoError(t, sch.Validate(inst), line)
			}
		})
	}
}

// requireSchema fails t unless line, one JSON value, is the shape
// docs/cli-json.schema.json gives the definition def.
func requireSchema(t *testing.T, def, line string) {
	t.Helper()
	compiler := jsonschema.NewCompiler()
	compiler.AssertFormat()
	sch, err := compiler.Compile(cliSchema + "#/$defs/" + def)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	require.NoError(t, err, line)
	require.NoError(t, sch.Validate(inst), line)
}

// stuckOutbox returns an outbox with one stuck session, default/coder/s1.
func stuckOutbox(t *testing.T) string {
	t.Helper()
	dir := emptyOutbox(t)
	key := "default/coder/s1/L0/20260101T000000Z-r1-0000000000000001-0123456789abcdef.jsonl.zst"
	failed := filepath.Join(dir, "failed", filepath.FromSlash(key))
	require.NoError(t, os.MkdirAll(filepath.Dir(failed), 0o755))
	require.NoError(t, os.WriteFile(failed, []byte("not a segment"), 0o644))
	return dir
}
