package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
)

// writeStep is one run of the command line: arguments (the store is added), stdin.
type writeStep struct {
	args  []string
	stdin string
}

// writeCase is an import or append tried on a store prepared by setup. A refused
// write (code 1) must leave the store as it was.
type writeCase struct {
	name   string
	setup  []writeStep
	strict bool // setup also creates session "strict" of owner acme/alice, strict
	try    writeStep
	code   int
	stdout string // substring of stdout
	stderr string // substring of stderr
	// after runs once the write succeeded; each must exit 0.
	after [][]string
}

func TestWrite_File(t *testing.T) { testWrites(t, fileBackend()) }

func TestWrite_MinIO(t *testing.T) { testWrites(t, s3Backend()) }

// testWrites: import and append read the session first and refuse, writing
// nothing, an input that would merge two sessions, leave one without a header
// first (which export and restore refuse) or put an id in conflict; an input the
// session holds already changes nothing and says so.
func testWrites(t *testing.T, b backend) {
	v3, v1 := fixture(t, fixtureV3), fixture(t, fixtureV1)
	sel := func(session string) []string { return []string{"--agent", "a", "--session", session} }
	importTo := func(session, file string) writeStep {
		return writeStep{args: append(append([]string{"import"}, sel(session)...), file)}
	}
	appendTo := func(session string, lines ...string) writeStep {
		return writeStep{args: append([]string{"append"}, sel(session)...), stdin: strings.Join(lines, "\n") + "\n"}
	}
	edited := filepath.Join(t.TempDir(), "edited.jsonl")
	data, err := os.ReadFile(v3)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	lines[3] = strings.Replace(lines[3], `"timestamp":"`, `"timestamp":"1`, 1)
	require.NoError(t, os.WriteFile(edited, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	readable := func(session string) [][]string {
		return [][]string{
			append([]string{"export"}, sel(session)...),
			append([]string{"restore", "--out", t.TempDir()}, sel(session)...),
			append([]string{"verify"}, sel(session)...),
		}
	}
	other := `{"type":"custom","id":"e1","parentId":null,"customType":"other"}`

	cases := []writeCase{
		{name: "import another file as the same session",
			setup: []writeStep{importTo("mix", v1)}, try: importTo("mix", v3),
			code: 1, stderr: "a session has one header: session default/a/mix is session replay-session-1 (its header's id), the input's header is " + fixtureV3ID + "'s"},
		{name: "import the same file again",
			setup: []writeStep{importTo("s", v3)}, try: importTo("s", v3),
			code: 0, stdout: "unchanged (already imported)", after: readable("s")},
		{name: "import a file whose entry was edited",
			setup: []writeStep{importTo("s", v3)}, try: importTo("s", edited),
			code: 1, stderr: "entry id conflict: line 4: session default/a/s holds entry "},
		{name: "append an entry to a new session",
			try:  appendTo("new", `{"type":"custom","id":"x1","parentId":null,"customType":"note"}`),
			code: 1, stderr: "a new session starts with its session header: session default/a/new does not exist, and line 1 is not a session header"},
		{name: "append a header and an entry to a new session",
			try:  appendTo("new", headerLine("new"), entryLine("e1", "")),
			code: 0, stdout: "2 entries\t2 added as ", after: readable("new")},
		{name: "append a second header to a new session",
			try:  appendTo("new", headerLine("new"), entryLine("e1", ""), headerLine("other")),
			code: 1, stderr: "line 3 is a second session header (other) after new"},
		{name: "append an id the session holds with other bytes",
			setup: []writeStep{appendTo("s", headerLine("s"), entryLine("e1", ""))}, try: appendTo("s", other),
			code: 1, stderr: "entry id conflict: line 1: session default/a/s holds entry e1 with other bytes"},
		{name: "append one id twice with other bytes",
			setup: []writeStep{appendTo("s", headerLine("s"))}, try: appendTo("s", entryLine("e1", ""), other),
			code: 1, stderr: "line 2: id e1 appears twice with other bytes"},
		{name: "append another session's header",
			setup: []writeStep{appendTo("s", headerLine("s"), entryLine("e1", ""))}, try: appendTo("s", headerLine("t"), entryLine("e2", "e1")),
			code: 1, stderr: "session default/a/s is session s (its header's id), the input's header is t's"},
		{name: "append the session's own header again, and an entry",
			setup: []writeStep{appendTo("s", headerLine("s"), entryLine("e1", ""))}, try: appendTo("s", headerLine("s"), entryLine("e2", "e1")),
			code: 0, stdout: "2 entries\t1 added as ", after: readable("s")},
		{name: "append what the session holds",
			setup: []writeStep{appendTo("s", headerLine("s"), entryLine("e1", ""))}, try: appendTo("s", entryLine("e1", "")),
			code: 0, stdout: "default/a/s\t1 entry\tunchanged (the session holds them all)\n", after: readable("s")},
		{name: "append --force writes a conflict as asked",
			setup: []writeStep{appendTo("s", headerLine("s"), entryLine("e1", ""))},
			try:   writeStep{args: append([]string{"append", "--force"}, sel("s")...), stdin: other + "\n"},
			code:  0, stdout: "1 entry\t1 added as "},
		{name: "append to a strict session", strict: true,
			try:  writeStep{args: []string{"append", "--ns", "acme~alice", "--agent", "a", "--session", "strict"}, stdin: entryLine("e9", "") + "\n"},
			code: 1, stderr: "strict session: session acme~alice/a/strict is strict (it has a HEAD.json)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := b.fresh(t)
			run := func(st writeStep) result {
				args := append([]string{st.args[0], "--store", store}, st.args[1:]...)
				return cliWith(t, cmdOpts{stdin: st.stdin}, args...)
			}
			for _, st := range tc.setup {
				r := run(st)
				require.Equal(t, 0, r.code, "setup %v: %s", st.args, r.stderr)
			}
			if tc.strict {
				createStrict(t, store)
			}
			before := ""
			if tc.code != 0 {
				before = b.snapshot(t, store)
			}
			r := run(tc.try)
			require.Equal(t, tc.code, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
			require.Contains(t, r.stdout, tc.stdout)
			require.Contains(t, r.stderr, tc.stderr)
			if tc.code != 0 {
				require.Empty(t, r.stdout)
				require.Equal(t, before, b.snapshot(t, store), "a refused write writes nothing")
			}
			for _, args := range tc.after {
				r := cli(t, append([]string{args[0], "--store", store}, args[1:]...)...)
				require.Equal(t, 0, r.code, "%v after the write: %s", args, r.stderr)
			}
		})
	}
}

// createStrict creates session "strict" (agent "a") of owner acme/alice in the
// store at url, in strict mode, with one entry.
func createStrict(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	s := openStoreAt(t, url)
	repo, err := repository.New(s, repository.Owner{Tenant: "acme", User: "alice"}, repository.Config{AgentID: "a"})
	require.NoError(t, err)
	defer repo.Close()
	sess, err := repo.Create(ctx, repository.CreateOptions{ID: "strict", Strict: true})
	require.NoError(t, err)
	require.NoError(t, sess.AppendIf(ctx, "", []byte(entryLine("e1", ""))))
}
