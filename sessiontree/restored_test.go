package sessiontree_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestWriteRestoredLean_SameFilesAsRestoreAndFlush: the files WriteRestoredLean
// writes from a lean read are byte for byte those that Restore and a Flush write
// for the same session, whatever the store holds (a second header, a header
// after entries, entries a Tree skips, "leaf" entries, a session larger than the
// write buffer), and so is the segments file: a Tree loaded from the files
// finds nothing new in the store.
func TestWriteRestoredLean_SameFilesAsRestoreAndFlush(t *testing.T) {
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	header := func(id string) string { return string(pi.NewHeader(id, ts, "/work", "").Raw()) }
	m := func(id, parent, text string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":%q}}`, id, p, text)
	}
	big := strings.Repeat("x", 300<<10)
	tests := []struct {
		name     string
		segments [][]string
		noHeader bool
	}{
		{"header and entries", [][]string{{header("s"), m("a1", "", "hi"), m("a2", "a1", "there")}, {m("a3", "a2", "again")}}, false},
		{"two headers: the first wins", [][]string{{header("s"), m("a1", "", "hi")}, {header("other"), m("a2", "a1", "x")}}, false},
		{"header after entries", [][]string{{m("a1", "", "hi")}, {header("s"), m("a2", "a1", "x")}}, false},
		{"entries a tree skips", [][]string{{header("s"), `{"id":"n1","parentId":null}`, `{"type":"","id":"n2"}`,
			`{"type":"session","id":"n3","version":"x"}`, m("a1", "", "hi")}}, false},
		{"leaf entries", [][]string{{header("s"), m("a1", "", "hi"), m("a2", "a1", "x")},
			{`{"type":"leaf","id":"l1","parentId":"a2","timestamp":"2026-01-01T00:00:00.000Z","targetId":"a1"}`}}, false},
		{"larger than the write buffer", [][]string{{header("s"), m("a1", "", big), m("a2", "a1", big)}, {m("a3", "a2", big), m("a4", "a3", big)}}, false},
		{"no header", [][]string{{m("a1", "", "hi")}}, true},
		{"origins larger than the write buffer", chain(header("s"), 3, 8000, m), false},
	}
	ctx := context.Background()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
			require.NoError(t, err)
			defer store.Close()
			sid := fmt.Sprintf("session-%d", i)
			ref := storedSession{segments: tc.segments}.write(t, store, nil, sid)
			res, err := store.ReadLean(ctx, ref)
			require.NoError(t, err)
			leanCfg := sessiontree.Config{Root: t.TempDir(), NoSync: true}
			got, err := sessiontree.WriteRestoredLean(leanCfg, who, "agent", sid, res)
			if tc.noHeader {
				require.ErrorIs(t, err, sessiontree.ErrNoHeader)
				_, serr := os.Stat(got.Files.Context)
				require.ErrorIs(t, serr, os.ErrNotExist, "nothing written")
				return
			}
			require.NoError(t, err)

			requireAsRestoreAndFlush(t, store, sid, got)

			// The segments file says the files hold every segment: nothing to fetch.
			loaded, rep, err := sessiontree.Load(ctx, sessiontree.Config{Root: leanCfg.Root, Store: store, NoSync: true}, who, "agent", sid)
			require.NoError(t, err)
			require.True(t, rep.Clean())
			require.True(t, loaded.SegmentsFileCurrent())
			require.Equal(t, len(tc.segments), loaded.HeldSegments())
			sync, err := loaded.Pull(ctx)
			require.NoError(t, err)
			require.Zero(t, sync.Added)
		})
	}
}

// chain returns segs segments of n entries each, one chain of messages after
// header (in the first segment): with n in the thousands, the origin records of
// the session are larger than the buffer the origins file is written through.
func chain(header string, segs, n int, m func(id, parent, text string) string) [][]string {
	out := make([][]string, segs)
	out[0] = []string{header}
	parent := ""
	for k := range segs {
		for j := range n {
			id := fmt.Sprintf("c%d-%d", k, j)
			out[k] = append(out[k], m(id, parent, "x"))
			parent = id
		}
	}
	return out
}

// TestWriteRestoredLean_RefusesExistingFiles: like Restore, it does not write over
// a session that has local files.
func TestWriteRestoredLean_RefusesExistingFiles(t *testing.T) {
	ctx := context.Background()
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(t, err)
	defer store.Close()
	w, err := transcript.NewWriter("writer")
	require.NoError(t, err)
	ref, err := who.Ref("agent", "s")
	require.NoError(t, err)
	_, err = store.AppendSegment(ctx, ref, [][]byte{pi.NewHeader("s", time.Unix(0, 0), "/", "").Raw()}, w)
	require.NoError(t, err)
	res, err := store.ReadLean(ctx, ref)
	require.NoError(t, err)
	cfg := sessiontree.Config{Root: t.TempDir(), NoSync: true}
	_, err = sessiontree.WriteRestoredLean(cfg, who, "agent", "s", res)
	require.NoError(t, err)
	_, err = sessiontree.WriteRestoredLean(cfg, who, "agent", "s", res)
	require.ErrorContains(t, err, "exists")
}

// TestClassifyRaw: one parse gives what the header parser and ParseEntry decide.
func TestClassifyRaw(t *testing.T) {
	tests := []struct {
		raw  string
		want sessiontree.RawKind
	}{
		{string(pi.NewHeader("s", time.Unix(0, 0), "/", "").Raw()), sessiontree.RawHeader},
		{`{"type":"message","id":"a","parentId":null}`, sessiontree.RawEntry},
		{`{"type":"leaf","id":"l","targetId":null}`, sessiontree.RawLeaf},
		{`{"type":"session","version":3}`, sessiontree.RawInvalid},
		{`{"type":"message"}`, sessiontree.RawInvalid},
		{`{"id":"a"}`, sessiontree.RawInvalid},
		{`not json`, sessiontree.RawInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := sessiontree.ClassifyRaw([]byte(tc.raw))
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.want == sessiontree.RawInvalid, err != nil)
		})
	}
}
