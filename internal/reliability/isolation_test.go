package reliability_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// Tenants of the isolation tests. B's name starts with A's, so a key-prefix
// mistake would show.
const (
	tenantA = "acme"
	tenantB = "acme2"
)

// isolationFixture is a file bucket holding sessions of tenants A and B, with B's
// sessions compactable.
type isolationFixture struct {
	dir   string
	b     bucket.Bucket
	root  *transcript.Store // unbound
	bRefs []transcript.TranscriptRef
	bKeys []string
}

func newIsolationFixture(t *testing.T) *isolationFixture {
	ctx := ctxTimeout(t, time.Minute)
	f := &isolationFixture{dir: filepath.Join(t.TempDir(), "bucket")}
	var err error
	f.b, err = filebucket.New(f.dir)
	require.NoError(t, err)
	f.root = newStore(t, f.b, "")
	w := transcript.NewRandomWriter()
	for _, ns := range []string{tenantA, tenantB} {
		for _, sid := range []string{"shared-id", "only-" + ns} {
			ref := transcript.TranscriptRef{Namespace: ns, AgentID: "agent", SessionID: sid}
			for k := range 4 {
				lines := entryLines(ns+"-"+sid, k*2, 2)
				if k == 0 { // a session header, so that restore can rebuild the session
					lines = append([][]byte{fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-02T03:04:05.000Z","cwd":"/"}`, sid)}, lines...)
				}
				info, err := f.root.AppendSegment(ctx, ref, lines, w)
				require.NoError(t, err)
				if ns == tenantB {
					f.bKeys = append(f.bKeys, info.Key)
				}
			}
			if ns == tenantB {
				f.bRefs = append(f.bRefs, ref)
			}
		}
	}
	return f
}

// requireNotFound checks that err says "not found" and nothing else.
func requireNotFound(t *testing.T, err error, what string) {
	t.Helper()
	require.ErrorIs(t, err, bucket.ErrNotFound, what)
}

// TestIsolation_Store (at the store level): a store bound to
// tenant A can neither read, list, write, overwrite, compact nor delete anything of
// tenant B, by refs or by crafted keys, and always hears "not found" (or an empty
// listing, which says the same).
func TestIsolation_Store(t *testing.T) {
	f := newIsolationFixture(t)
	ctx := ctxTimeout(t, time.Minute)
	before := allKeys(t, ctx, f.b)
	a, err := f.root.WithNamespace(tenantA)
	require.NoError(t, err)
	w := transcript.NewRandomWriter()
	probes := 0
	for _, ref := range f.bRefs {
		what := ref.String()
		_, err := a.ReadAll(ctx, ref)
		requireNotFound(t, err, what)
		_, err = a.ReadNew(ctx, ref, transcript.SegmentSet{})
		requireNotFound(t, err, what)
		segs, err := a.ListSegments(ctx, ref)
		require.True(t, len(segs) == 0 && (err == nil || errors.Is(err, bucket.ErrNotFound)), what)
		_, err = a.AppendSegment(ctx, ref, [][]byte{[]byte(okEntry)}, w)
		requireNotFound(t, err, what)
		_, err = a.PrepareSegment(ref, [][]byte{[]byte(okEntry)}, w)
		requireNotFound(t, err, what)
		_, err = a.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
		requireNotFound(t, err, what)
		err = a.Delete(ctx, ref)
		require.True(t, err == nil || errors.Is(err, bucket.ErrNotFound), what)
		sess, err := a.ListSessions(ctx, tenantB, "agent")
		require.True(t, len(sess) == 0 && (err == nil || errors.Is(err, bucket.ErrNotFound)), what)
		agents, err := a.ListAgents(ctx, tenantB)
		require.True(t, len(agents) == 0 && (err == nil || errors.Is(err, bucket.ErrNotFound)), what)
		probes += 10
	}
	nss, err := a.ListNamespaces(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{tenantA}, nss)
	// Crafted keys: B's own keys, and keys that try to climb out of A.
	obj, err := f.root.PrepareSegment(transcript.TranscriptRef{Namespace: tenantB, AgentID: "agent", SessionID: "shared-id"},
		[][]byte{[]byte(okEntry)}, w)
	require.NoError(t, err)
	crafted := append(append([]string{}, f.bKeys...),
		tenantA+"/../"+f.bKeys[0],
		tenantA+"/agent/../../"+f.bKeys[0],
		strings.Replace(f.bKeys[0], tenantB+"/", tenantA+"/../"+tenantB+"/", 1),
		"/"+f.bKeys[0], "./"+f.bKeys[0], f.bKeys[0]+"\x00",
	)
	for _, key := range crafted {
		what := strings.ToValidUTF8(key, "?")
		_, err := a.ReadSegment(ctx, key)
		require.Error(t, err, what)
		if _, perr := transcript.ParseKey("", key); perr == nil {
			requireNotFound(t, err, what)
		}
		err = a.PutSegment(ctx, key, obj.Data)
		require.Error(t, err, what)
		probes += 2
	}
	requireNotFound(t, a.PutSegment(ctx, obj.Info.Key, obj.Data), "a new key in B")
	require.Equal(t, before, allKeys(t, ctx, f.b), "tenant A changed nothing of B (nor anything else)")
	// B's data is intact.
	for _, ref := range f.bRefs {
		res, err := f.root.ReadAll(ctx, ref)
		require.NoError(t, err)
		require.Len(t, res.Entries, 9)
	}
	// A SessionTree bound to A cannot restore B's session through A's store.
	_, _, err = sessiontree.Restore(ctx, sessiontree.Config{Root: t.TempDir(), Store: a},
		sessiontree.Identity{Namespace: tenantA}, "agent", "only-"+tenantB)
	require.ErrorIs(t, err, bucket.ErrNotFound)
	t.Logf("%d probes of tenant B from tenant A: all not found, nothing changed", probes+2)
}

// TestIsolation_CLI: every read command of the real CLI bound to tenant A (--ns)
// answers "not found" for B's sessions and lists none of them, append with --ns A
// writes only into A, and the compaction job bound to A leaves B's keys untouched.
func TestIsolation_CLI(t *testing.T) {
	f := newIsolationFixture(t)
	ctx := ctxTimeout(t, 2*time.Minute)
	before := allKeys(t, ctx, f.b)
	cli := buildCmd(t, "transcript")
	store := "file://" + f.dir
	run := func(stdin string, args ...string) (string, int) {
		cmd := exec.Command(cli, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Stdin = strings.NewReader(stdin)
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		}
		require.NoError(t, err, out.String())
		return out.String(), 0
	}
	probes := 0
	for _, cmd := range []string{"cat", "export", "context", "tree", "verify", "ls", "stats"} {
		args := []string{cmd, "--store", store, "--ns", tenantA, "--agent", "agent", "--session", "only-" + tenantB}
		if cmd == "ls" || cmd == "stats" {
			args = []string{cmd, "--store", store, "--ns", tenantA, "--json"}
		}
		out, code := run("", args...)
		require.NotContains(t, out, tenantB+"-", "%s shows B's entries", cmd)
		if cmd == "ls" || cmd == "stats" {
			require.NotContains(t, out, tenantB, "%s lists B", cmd)
		} else {
			require.Equal(t, 1, code, "%s: %s", cmd, out)
			require.Contains(t, strings.ToLower(out), "not found", "%s: %s", cmd, out)
		}
		probes++
	}
	// The session id both tenants use: A sees only its own entries.
	out, code := run("", "cat", "--store", store, "--ns", tenantA, "--agent", "agent", "--session", "shared-id")
	require.Equal(t, 0, code, out)
	require.NotContains(t, out, tenantB+"-")
	require.Contains(t, out, tenantA+"-")
	// restore --ns A rebuilds only A's sessions.
	restored := t.TempDir()
	out, code = run("", "restore", "--store", store, "--ns", tenantA, "--out", restored)
	require.Equal(t, 0, code, out)
	var matches []string
	require.NoError(t, filepath.WalkDir(restored, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			matches = append(matches, p)
		}
		return err
	}))
	require.NotEmpty(t, matches, "restore wrote A's sessions")
	for _, m := range matches {
		require.NotContains(t, m, tenantB, "restore --ns %s wrote %s", tenantA, m)
	}
	// append with --ns A lands in A, whatever the session id claims.
	header, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": "appended-session", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"})
	entry, _ := json.Marshal(map[string]any{"type": "custom", "id": "appended", "parentId": nil, "customType": "x"})
	out, code = run(string(header)+"\n"+string(entry)+"\n", "append", "--store", store, "--ns", tenantA, "--agent", "agent", "--session", "only-"+tenantB)
	require.Equal(t, 0, code, out)
	// The compaction job bound to A compacts A and leaves B alone.
	job := exec.Command(buildCmd(t, "transcript-compact"), "--store", store, "--ns", tenantA, "--min-segments", "2", "--delete-delay", "0", "--json")
	jobOut, err := job.CombinedOutput()
	require.NoError(t, err, "%s", jobOut)
	require.NotContains(t, string(jobOut), tenantB)
	probes += 3
	after := allKeys(t, ctx, f.b)
	compactedA := 0
	for _, k := range after {
		if strings.HasPrefix(k, tenantA+"/") && strings.Contains(k, "/L1/") {
			compactedA++
		}
	}
	require.NotZero(t, compactedA, "the job compacted A")
	for _, k := range before {
		if strings.HasPrefix(k, tenantB+"/") {
			require.Contains(t, after, k, "B's key %s vanished", k)
		}
	}
	for _, k := range after {
		if strings.HasPrefix(k, tenantB+"/") {
			require.Contains(t, before, k, "a key %s appeared in B", k)
		}
	}
	t.Logf("%d CLI probes of tenant B from tenant A: all not found or empty; B unchanged", probes)
}
