package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// The ghost: what a losing append of a strict session wrote (a segment no head
// commits). No command may show it.
const ghostText = "GHOST-never-committed"

func TestStrictRead_File(t *testing.T) { testStrictRead(t, fileBackend()) }

func TestStrictRead_MinIO(t *testing.T) { testStrictRead(t, s3Backend()) }

// strictFixture is a store holding strict session a/st (a header and two
// messages committed, then an uncommitted segment holding the ghost, a child
// of the head) and default-mode session a/df.
type strictFixture struct {
	url   string
	s     *transcript.Store
	b     bucket.Bucket
	ref   transcript.TranscriptRef
	head  transcript.Head
	last  transcript.SegmentInfo // the last committed segment
	ghost transcript.SegmentInfo
}

// messageLine is a user message as Pi writes it.
func messageLine(id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-09-25T22:29:0%d.000Z","message":{"role":"user","content":%q,"timestamp":1}}`,
		id, p, len(id)%10, text)
}

func newStrictFixture(t *testing.T, b backend) *strictFixture {
	t.Helper()
	ctx := t.Context()
	f := &strictFixture{url: b.fresh(t), ref: transcript.TranscriptRef{AgentID: "a", SessionID: "st"}}
	bk, prefix, err := bucketurl.Open(ctx, f.url)
	require.NoError(t, err)
	f.b = bk
	f.s, err = transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { f.s.Close() })
	w, err := transcript.NewWriter("server")
	require.NoError(t, err)
	_, f.head, err = f.s.CreateSession(ctx, f.ref, [][]byte{[]byte(headerLine("st"))}, w, transcript.CreateOptions{Strict: true})
	require.NoError(t, err)
	parent := ""
	for _, m := range []struct{ id, text string }{{"m1", "hello committed"}, {"m2", "second committed"}} {
		f.last, f.head, err = f.s.CommitSegment(ctx, f.ref, f.head, [][]byte{[]byte(messageLine(m.id, parent, m.text))}, w, m.id, nil)
		require.NoError(t, err)
		parent = m.id
	}
	f.ghost = f.writeGhost(t, "ghost", "m2")

	r := cliWith(t, cmdOpts{stdin: headerLine("df") + "\n" + messageLine("d1", "", "default mode") + "\n"},
		"append", "--store", f.url, "--agent", "a", "--session", "df")
	require.Equal(t, 0, r.code, r.stderr)
	return f
}

// writeGhost writes, as a losing append does, a segment holding a message id
// (a child of parent) that no head commits.
func (f *strictFixture) writeGhost(t *testing.T, id, parent string) transcript.SegmentInfo {
	t.Helper()
	loser, err := transcript.NewWriter("loser")
	require.NoError(t, err)
	info, err := f.s.AppendSegment(t.Context(), f.ref, [][]byte{[]byte(messageLine(id, parent, ghostText))}, loser)
	require.NoError(t, err)
	require.False(t, f.head.Commits(info.Key))
	return info
}

// commit commits a message (a child of the head) to the strict session.
func (f *strictFixture) commit(t *testing.T, id, text string) {
	t.Helper()
	w, err := transcript.NewWriter("server")
	require.NoError(t, err)
	f.last, f.head, err = f.s.CommitSegment(t.Context(), f.ref, f.head, [][]byte{[]byte(messageLine(id, f.head.Entry, text))}, w, id, nil)
	require.NoError(t, err)
}

// headKey is the key of the strict session's head.
func (f *strictFixture) headKey() string { return f.s.SessionPrefix(f.ref) + transcript.HeadName }

// jsonlIDs returns the ids of the JSONL lines of out.
func jsonlIDs(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		ids = append(ids, e.ID)
	}
	return ids
}

// piFileOf returns the bytes of the one Pi session file under root whose name
// ends in _{id}.jsonl.
func piFileOf(t *testing.T, root, id string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(root, "*", "*_"+id+".jsonl"))
	require.NoError(t, err)
	require.Len(t, matches, 1, "Pi files of %s under %s", id, root)
	b, err := os.ReadFile(matches[0])
	require.NoError(t, err)
	return string(b)
}

// TestStrictRead: every command that reads a strict session's entries reads
// what its head commits, as the server does: a segment a losing append wrote
// is not part of the session. A default-mode session beside it reads whole.
func testStrictRead(t *testing.T, b backend) {
	committed := []string{"st", "m1", "m2"}
	tests := []struct {
		name  string
		args  []string // after the command's store and selection flags
		check func(t *testing.T, f *strictFixture, out, dir string)
	}{
		{"cat", []string{"cat", "--agent", "a", "--session", "st"}, func(t *testing.T, _ *strictFixture, out, _ string) {
			require.Equal(t, committed, jsonlIDs(t, out))
		}},
		{"export", []string{"export", "--agent", "a", "--session", "st"}, func(t *testing.T, _ *strictFixture, out, _ string) {
			require.Equal(t, committed, jsonlIDs(t, out))
		}},
		{"context", []string{"context", "--agent", "a", "--session", "st"}, func(t *testing.T, _ *strictFixture, out, _ string) {
			require.Contains(t, out, "second committed", "the context is at the committed head")
			require.Contains(t, out, "hello committed")
		}},
		{"tree", []string{"tree", "--agent", "a", "--session", "st"}, func(t *testing.T, _ *strictFixture, out, _ string) {
			require.Contains(t, out, "@ ", out)
			require.Contains(t, out, "second committed")
			require.Regexp(t, `@ .*second committed`, out, "the active leaf is the head")
		}},
		{"ls", []string{"ls", "--agent", "a", "--session", "st", "--json"}, func(t *testing.T, f *strictFixture, out, _ string) {
			var info sessionInfo
			require.NoError(t, json.Unmarshal([]byte(out), &info))
			require.Equal(t, 2, info.Entries, "the header not counted")
			require.Equal(t, len(f.head.Segments), info.Segments, "the segments the read used")
			require.Positive(t, info.Bytes)
		}},
		{"restore", []string{"restore", "--agent", "a", "--session", "st", "--out"}, func(t *testing.T, _ *strictFixture, _, dir string) {
			files := sessiontree.FilesOf(dir, transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "st"})
			for _, p := range []string{files.Log, files.Context} {
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.Equal(t, committed, jsonlIDs(t, string(b)), p)
			}
		}},
		{"restore --layout pi", []string{"restore", "--layout", "pi", "--agent", "a", "--session", "st", "--out"}, func(t *testing.T, _ *strictFixture, _, dir string) {
			require.Equal(t, committed, jsonlIDs(t, piFileOf(t, dir, "st")))
		}},
		{"restore namespace", []string{"restore", "--out"}, func(t *testing.T, _ *strictFixture, _, dir string) {
			for sid, want := range map[string][]string{"st": committed, "df": {"df", "d1"}} {
				files := sessiontree.FilesOf(dir, transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: sid})
				b, err := os.ReadFile(files.Log)
				require.NoError(t, err)
				require.Equal(t, want, jsonlIDs(t, string(b)), sid)
			}
		}},
		{"restore namespace --layout pi", []string{"restore", "--layout", "pi", "--out"}, func(t *testing.T, _ *strictFixture, _, dir string) {
			require.Equal(t, committed, jsonlIDs(t, piFileOf(t, dir, "st")))
			require.Equal(t, []string{"df", "d1"}, jsonlIDs(t, piFileOf(t, dir, "df")))
		}},
	}
	f := newStrictFixture(t, b)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{}, tt.args...)
			if args[len(args)-1] == "--out" {
				args = append(args, dir)
			}
			args = append(args, "--store", f.url)
			r := cli(t, args...)
			require.Equal(t, 0, r.code, "%v: stdout %s\nstderr %s", args, r.stdout, r.stderr)
			require.NotContains(t, r.stdout+r.stderr, ghostText)
			require.NotContains(t, r.stdout, "ghost")
			tt.check(t, f, r.stdout, dir)
			require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				require.NotContains(t, string(b), ghostText, p)
				return err
			}))
		})
	}
}

func TestStrictRead_RestoreAgain_File(t *testing.T) { testStrictRestoreAgain(t, fileBackend()) }

func TestStrictRead_RestoreAgain_MinIO(t *testing.T) { testStrictRestoreAgain(t, s3Backend()) }

// A restore into files a restore left reads only what they lack; of a strict
// session, what its head commits since, not a new uncommitted segment. Once a
// compaction replaced the segments the files hold, the session is read whole
// again (and its files are found identical).
func testStrictRestoreAgain(t *testing.T, b backend) {
	f := newStrictFixture(t, b)
	out := t.TempDir()
	restore := func() string {
		t.Helper()
		r := cli(t, "restore", "--store", f.url, "--out", out, "--agent", "a", "--session", "st", "--json")
		require.Equal(t, 0, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
		return r.stdout
	}
	logIDs := func() []string {
		t.Helper()
		files := sessiontree.FilesOf(out, transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "st"})
		b, err := os.ReadFile(files.Log)
		require.NoError(t, err)
		require.NotContains(t, string(b), ghostText)
		return jsonlIDs(t, string(b))
	}
	restore()
	require.Equal(t, []string{"st", "m1", "m2"}, logIDs())

	f.commit(t, "m3", "third committed")
	f.writeGhost(t, "ghost2", "m3")
	require.Contains(t, restore(), `"restored":1`)
	require.Equal(t, []string{"st", "m1", "m2", "m3"}, logIDs())

	_, err := f.s.Compact(t.Context(), f.ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	h, err := f.s.ReadHead(t.Context(), f.ref)
	require.NoError(t, err)
	require.Len(t, h.Segments, 1, "compacted: %v", h.Segments)
	require.Contains(t, restore(), `"skipped":1`)
	require.Equal(t, []string{"st", "m1", "m2", "m3"}, logIDs())
}

func TestStrictRead_DamagedHead_File(t *testing.T) { testStrictDamagedHead(t, fileBackend()) }

func TestStrictRead_DamagedHead_MinIO(t *testing.T) { testStrictDamagedHead(t, s3Backend()) }

// A strict session whose head cannot be used fails every command that reads
// its entries, naming the head: never read as a default-mode session (every
// segment listed), never "not found".
func testStrictDamagedHead(t *testing.T, b backend) {
	damages := []struct {
		name   string
		damage func(t *testing.T, f *strictFixture)
		want   string // in the error, beside the session
	}{
		{"garbage", func(t *testing.T, f *strictFixture) {
			ctx := t.Context()
			require.NoError(t, f.b.Delete(ctx, f.headKey()))
			require.NoError(t, f.b.Put(ctx, f.headKey(), bytes.NewReader([]byte("{garbage")), -1, bucket.PutOptions{}))
		}, "HEAD.json"},
		{"names no segment", func(t *testing.T, f *strictFixture) {
			ctx := t.Context()
			require.NoError(t, f.b.Delete(ctx, f.headKey()))
			head := `{"format":1,"version":9,"head":"m2","segments":["L0/nonsense"]}`
			require.NoError(t, f.b.Put(ctx, f.headKey(), strings.NewReader(head), -1, bucket.PutOptions{}))
		}, "HEAD.json"},
		{"commits a missing segment", func(t *testing.T, f *strictFixture) {
			require.NoError(t, f.b.Delete(t.Context(), f.last.Key))
		}, "missing"},
	}
	commands := [][]string{
		{"cat", "--agent", "a", "--session", "st"},
		{"export", "--agent", "a", "--session", "st"},
		{"context", "--agent", "a", "--session", "st"},
		{"tree", "--agent", "a", "--session", "st"},
		{"ls", "--agent", "a", "--session", "st"},
		{"restore", "--agent", "a", "--session", "st", "--out"},
		{"restore", "--layout", "pi", "--agent", "a", "--session", "st", "--out"},
		{"restore", "--out"},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			f := newStrictFixture(t, b)
			d.damage(t, f)
			for _, c := range commands {
				args := append([]string{}, c...)
				if args[len(args)-1] == "--out" {
					args = append(args, t.TempDir())
				}
				args = append(args, "--store", f.url)
				r := cli(t, args...)
				all := r.stdout + r.stderr
				require.Equal(t, 1, r.code, "%v: stdout %s\nstderr %s", args, r.stdout, r.stderr)
				require.Contains(t, all, d.want, "%v", args)
				require.Contains(t, all, "default/a/st", "%v", args)
				require.NotContains(t, all, "not found", "%v", args)
				require.NotContains(t, all, ghostText, "%v", args)
			}
		})
	}
}

// What a command's read of a session costs: a default-mode session what a
// ReadLean costs (one LIST, a GET per segment), a strict one the GET of its
// head more, and no second LIST (the segments it commits are read by name).
func TestStrictRead_Requests(t *testing.T) {
	ctx := context.Background()
	cb, s, w := countedStore(t)
	strict := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "st"}
	_, h, err := s.CreateSession(ctx, strict, [][]byte{[]byte(headerLine("st"))}, w, transcript.CreateOptions{Strict: true})
	require.NoError(t, err)
	_, h, err = s.CommitSegment(ctx, strict, h, [][]byte{[]byte(messageLine("m1", "", "committed"))}, w, "m1", nil)
	require.NoError(t, err)
	_, err = s.AppendSegment(ctx, strict, [][]byte{[]byte(messageLine("ghost", "m1", ghostText))}, w)
	require.NoError(t, err)
	plain := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "df"}
	for _, line := range []string{headerLine("df"), messageLine("d1", "", "one"), messageLine("d2", "d1", "two")} {
		_, err := s.AppendSegment(ctx, plain, [][]byte{[]byte(line)}, w)
		require.NoError(t, err)
	}
	tests := []struct {
		name      string
		ref       transcript.TranscriptRef
		ids       []string
		list, get int64
	}{
		{"default mode", plain, []string{"df", "d1", "d2"}, 1, 3},
		{"strict", strict, []string{"st", "m1"}, 1, 1 + int64(len(h.Segments))},
	}
	for _, tt := range tests {
		for _, stored := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stored=%v", tt.name, stored), func(t *testing.T) {
				r := newSessionReader(s, tt.ref)
				cb.ResetCounts()
				read := r.ReadLean
				if stored {
					read = r.ReadLeanStored
				}
				res, err := read(ctx, tt.ref)
				require.NoError(t, err)
				c := cb.Counts()
				require.Equal(t, tt.list, c.List, "LISTs")
				require.Equal(t, tt.get, c.Get, "GETs")
				var ids []string
				for i := range res.Len() {
					ids = append(ids, res.ID(i))
				}
				require.Equal(t, tt.ids, ids)
			})
		}
	}
}

// tree names the writer of each entry of a compacted strict session from the
// level-0 segments its head commits: an uncommitted segment that holds one of
// its ids (a losing append whose entry another writer committed) is not one.
func TestStrictRead_TreeWriters(t *testing.T) {
	for _, b := range []backend{fileBackend(), s3Backend()} {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			f := &strictFixture{url: b.fresh(t), ref: transcript.TranscriptRef{AgentID: "a", SessionID: "st"}}
			bk, prefix, err := bucketurl.Open(ctx, f.url)
			require.NoError(t, err)
			f.s, err = transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
			require.NoError(t, err)
			t.Cleanup(func() { f.s.Close() })
			winner, err := transcript.NewWriter("winner")
			require.NoError(t, err)
			_, f.head, err = f.s.CreateSession(ctx, f.ref, [][]byte{[]byte(headerLine("st"))}, winner, transcript.CreateOptions{Strict: true})
			require.NoError(t, err)
			f.commit(t, "m1", "first")
			// The loser's m2 lands first and is never committed; the winner's is.
			f.writeGhost(t, "m2", "m1")
			f.commit(t, "m2", "second committed")
			_, err = f.s.Compact(ctx, f.ref, transcript.CompactOptions{MinSegments: 2})
			require.NoError(t, err)
			h, err := f.s.ReadHead(ctx, f.ref)
			require.NoError(t, err)
			require.Len(t, h.Segments, 1, "compacted, the inputs kept for their delete delay")

			out := ok(t, "tree", "--store", f.url, "--agent", "a", "--session", "st")
			require.NotContains(t, out, ghostText)
			require.NotContains(t, out, "loser", out)
			require.Regexp(t, `m2 message user: second committed \[server\]`, out)
		})
	}
}
