package reliability_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// hostileNames are namespace, agent and session ids no key may be built from.
var hostileNames = []string{
	"", ".", "..", "../x", "x/..", "a/b", "/abs", `a\b`, "a..b", "a\x00b", "a\nb", "\xff\xfe",
	strings.Repeat("n", transcript.MaxRefPartLen+1), "%2e%2e", "x/../../../etc",
	// Ids that would share a local file, vanish from a directory copy, look like
	// another id, or be taken for an element of the key layout.
	"x.log", ".tmp-y", ".hidden", "a\u200bb", "a\u202eb", "s\x1b[2J", "\ufeffs", "L0", "L12", "gc",
}

// allKeys lists every key of b.
func allKeys(t *testing.T, ctx context.Context, b bucket.Bucket) []string {
	t.Helper()
	var keys []string
	require.NoError(t, b.List(ctx, bucket.ListOptions{}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	slices.Sort(keys)
	return keys
}

// TestHostile_Names: every store operation and
// SessionTree constructor refuses ids with "..", "/", NUL, control characters,
// invalid UTF-8 or excessive length, and none of them reads, writes or deletes
// anything, in the bucket or on the local disk. "%2e%2e" is a plain (valid) name:
// it is stored as those bytes, never decoded.
func TestHostile_Names(t *testing.T) {
	ctx := ctxTimeout(t, time.Minute)
	dir := t.TempDir()
	b, err := filebucket.New(filepath.Join(dir, "bucket"))
	require.NoError(t, err)
	store := newStore(t, b, "p")
	w := transcript.NewRandomWriter()
	for _, ref := range []transcript.TranscriptRef{
		{AgentID: "a", SessionID: "s"}, {AgentID: "a", SessionID: "s2"}, {Namespace: "other", AgentID: "a", SessionID: "s"},
	} {
		_, err := store.AppendSegment(ctx, ref, [][]byte{[]byte(okEntry)}, w)
		require.NoError(t, err)
	}
	before := allKeys(t, ctx, b)
	root := filepath.Join(dir, "local")
	refused := 0
	for _, bad := range hostileNames {
		for pos := range 3 {
			ref := transcript.TranscriptRef{Namespace: "default", AgentID: "a", SessionID: "s"}
			switch pos {
			case 0:
				ref.Namespace = bad
			case 1:
				ref.AgentID = bad
			case 2:
				ref.SessionID = bad
			}
			if bad == "" && pos == 0 || bad == "%2e%2e" {
				continue // the default namespace, and a valid name
			}
			what := strings.ToValidUTF8(ref.Namespace+"|"+ref.AgentID+"|"+ref.SessionID, "?")
			require.ErrorIs(t, ref.Validate(), transcript.ErrInvalidRef, what)
			_, err := store.AppendSegment(ctx, ref, [][]byte{[]byte(okEntry)}, w)
			require.ErrorIs(t, err, transcript.ErrInvalidRef, what)
			_, err = store.ReadAll(ctx, ref)
			require.Error(t, err, what)
			segs, err := store.ListSegments(ctx, ref)
			require.True(t, err != nil || len(segs) == 0, what)
			require.Error(t, store.Delete(ctx, ref), what)
			_, err = store.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
			require.Error(t, err, what)
			if pos < 2 {
				sess, err := store.ListSessions(ctx, ref.Namespace, ref.AgentID)
				require.True(t, err != nil || len(sess) == 0, what)
			}
			_, err = sessiontree.New(sessiontree.Config{Root: root}, sessiontree.Identity{Namespace: ref.Namespace},
				ref.AgentID, ref.SessionID, sessiontree.HeaderOptions{})
			require.Error(t, err, what)
			_, _, err = sessiontree.Open(ctx, sessiontree.Config{Root: root, Store: store}, sessiontree.Identity{Namespace: ref.Namespace},
				ref.AgentID, ref.SessionID, sessiontree.HeaderOptions{})
			require.Error(t, err, what)
			refused++
		}
	}
	require.Equal(t, before, allKeys(t, ctx, b), "no hostile name changed the bucket")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		require.Contains(t, []string{"bucket", "local"}, e.Name(), "nothing written beside the roots")
	}
	// Deleting session "s" leaves "s2", whose keys share the prefix "s".
	require.NoError(t, store.Delete(ctx, transcript.TranscriptRef{AgentID: "a", SessionID: "s"}))
	res, err := store.ReadAll(ctx, transcript.TranscriptRef{AgentID: "a", SessionID: "s2"})
	require.NoError(t, err)
	require.Len(t, res.Entries, 1)
	// The CLI refuses them as usage errors (argv cannot carry NUL).
	cli := buildCmd(t, "transcript")
	for _, bad := range hostileNames {
		if bad == "" || bad == "%2e%2e" || strings.ContainsRune(bad, 0) {
			continue
		}
		cmd := exec.Command(cli, "cat", "--store", "file://"+filepath.Join(dir, "bucket"), "--agent", "a", "--session", bad)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee) && ee.ExitCode() == 2, "cat --session %q: %v\n%s", bad, err, out.String())
		refused++
	}
	t.Logf("%d hostile ids refused by every operation; bucket and disk unchanged", refused)
}

// TestHostile_SessionFile: a Pi session file with malformed lines, non-UTF-8, a
// huge line, duplicate ids with different bytes, parent cycles and dangling
// parents loads (what can be kept is kept and everything else is reported),
// builds a context without hanging, and imports with the real CLI.
func TestHostile_SessionFile(t *testing.T) {
	var f bytes.Buffer
	f.WriteString(`{"type":"session","version":3,"id":"hostile","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/"}` + "\n")
	lines := []string{
		`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"FAKE"}}`,
		`{"type":"message","id":"c1","parentId":"c2","message":{"role":"user","content":"cycle"}}`,
		`{"type":"message","id":"c2","parentId":"c1","message":{"role":"user","content":"cycle"}}`,
		`{"type":"message","id":"self","parentId":"self","message":{"role":"user","content":"self"}}`,
		`{"type":"message","id":"orphan","parentId":"nobody","message":{"role":"user","content":"dangling"}}`,
		"{\"type\":\"message\",\"id\":\"bin\",\"parentId\":\"m1\",\"message\":{\"role\":\"user\",\"content\":\"\xff\xfe\"}}",
		`not json at all`, `[]`, `{"type":"message"}`, "\xff\xfe\xfd", `{"type":"leaf","id":"l1","targetId":"c1"}`,
	}
	for _, l := range lines {
		f.WriteString(l + "\n")
	}
	huge := !testing.Short()
	if huge {
		f.WriteString(`{"type":"message","id":"huge","content":"` + strings.Repeat("x", sessiontree.MaxLineBytes) + "\"}\n")
	}
	f.WriteString(`{"type":"message","id":"last","parentId":"m1","message":{"role":"user","content":"after the damage"}}` + "\n")

	h, es, rep, err := sessiontree.ParseSession(bytes.NewReader(f.Bytes()))
	require.NoError(t, err)
	require.Equal(t, "hostile", h.ID())
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID())
	}
	require.Equal(t, []string{"m1", "c1", "c2", "self", "orphan", "bin", "l1", "last"}, ids)
	require.Len(t, rep.Conflicts, 1, "the second m1")
	wantMalformed := 4
	if huge {
		wantMalformed++
	}
	require.Len(t, rep.Malformed, wantMalformed, "%v", rep.Malformed)
	done := make(chan sessiontree.Context, 1)
	go func() { done <- sessiontree.BuildContextFrom(es, nil) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("BuildContext hangs on a parent cycle")
	}
	for _, leaf := range []string{"c1", "c2", "self", "orphan"} {
		_ = sessiontree.BuildContextFrom(es, &leaf)
	}

	// The CLI refuses a file with malformed lines, naming them, and stores nothing;
	// the same file without them imports, conflicts and odd trees included.
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")
	cli := buildCmd(t, "transcript")
	path := filepath.Join(dir, "hostile.jsonl")
	require.NoError(t, os.WriteFile(path, f.Bytes(), 0o644))
	out, err := exec.Command(cli, "import", "--store", store, "--agent", "a", "--session", "hostile", path).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 1, ee.ExitCode(), "%s", out)
	require.Contains(t, string(out), "malformed line")
	_, err = exec.Command(cli, "cat", "--store", store, "--agent", "a", "--session", "hostile").Output()
	require.Error(t, err, "nothing imported")

	var clean bytes.Buffer
	for l := range strings.Lines(f.String()) {
		_, err := sessiontree.ParseEntry([]byte(strings.TrimSuffix(l, "\n")))
		if err == nil && len(l) <= sessiontree.MaxLineBytes || clean.Len() == 0 {
			clean.WriteString(l) // the header, and every entry line
		}
	}
	require.NoError(t, os.WriteFile(path, clean.Bytes(), 0o644))
	out, err = exec.Command(cli, "import", "--store", store, "--agent", "a", "--session", "hostile", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(cli, "cat", "--store", store, "--agent", "a", "--session", "hostile").Output()
	require.NoError(t, err)
	for _, id := range ids {
		require.Contains(t, string(out), `"id":"`+id+`"`)
	}
	require.NotContains(t, string(out), "FAKE", "the first version of a duplicate id is kept")
}
