package follow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

const fileA = piFolder + "/2026-01-02T03-04-05-678Z_s1.jsonl"

// TestFollower_Once_EachLineOnce: a session file's lines are uploaded as one
// segment, header first; a run that finds nothing new uploads nothing; new
// lines become one more segment.
func TestFollower_Once_EachLineOnce(t *testing.T) {
	fx := newFixture(t)
	lines := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo")}
	fx.write(fileA, lines...)
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), lines...)
	require.Equal(t, 1, fx.remote.segmentCount(refOf("s1")))

	require.NoError(t, fx.once())
	require.Equal(t, 1, fx.remote.segmentCount(refOf("s1")), "nothing new: nothing uploaded")

	fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), append(lines, entry("e3", "e2", "more"))...)
	require.Equal(t, 2, fx.remote.segmentCount(refOf("s1")))
}

// TestFollower_TornLine: an unterminated last line (Pi in the middle of a
// write) waits for its newline, then goes up with what follows it.
func TestFollower_TornLine(t *testing.T) {
	fx := newFixture(t)
	e3 := entry("e3", "e2", "a long answer")
	fx.write(fileA, header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"))
	fx.appendRaw(fileA, e3[:20])
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"))

	fx.appendRaw(fileA, e3[20:]+"\n"+entry("e4", "e3", "x"))
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"), e3)

	fx.appendRaw(fileA, "\n")
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"), e3, entry("e4", "e3", "x"))
	require.Empty(t, fx.take(follow.EventMalformed))
}

// TestFollower_PiRepair: Pi, loading a file whose last line a crash tore,
// appends a newline to it and goes on appending: the fragment is a complete
// line that is not an entry, skipped (and reported once) as Pi skips it.
func TestFollower_PiRepair(t *testing.T) {
	fx := newFixture(t)
	fx.write(fileA, header("s1"), entry("e1", "", "hi"))
	fx.appendRaw(fileA, `{"type":"message","id":"e2","par`)
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"))

	fx.appendRaw(fileA, "\n"+entry("e2b", "e1", "again")+"\n") // Pi's repair, then its next entry
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"), entry("e2b", "e1", "again"))
	mal := fx.take(follow.EventMalformed)
	require.Len(t, mal, 1)
	require.Equal(t, fileA, mal[0].File)
	require.Contains(t, mal[0].Message, "skipped, as Pi skips it")

	require.NoError(t, fx.once())
	require.Empty(t, fx.take(follow.EventMalformed), "reported once")
}

// TestFollower_RewriteInPlace: a file rewritten in place (Pi truncates and
// rewrites it) is read again from its start: what the store holds (same id and
// bytes) is not uploaded again, a new line is, and an id held with other bytes
// is a conflict, reported and not uploaded.
func TestFollower_RewriteInPlace(t *testing.T) {
	base := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo")}
	tests := []struct {
		name string
		// rewrite rewrites fileA (held: base) in fx.
		rewrite   func(fx *fixture)
		want      []string // the session afterwards
		conflicts int
	}{
		{"same bytes plus a line", func(fx *fixture) {
			fx.write(fileA, append(base, entry("e3", "e2", "new"))...)
		}, append(base, entry("e3", "e2", "new")), 0},
		{"shorter, then a line", func(fx *fixture) {
			fx.write(fileA, base[0], base[1], entry("e9", "e1", "other branch"))
		}, append(base, entry("e9", "e1", "other branch")), 0},
		{"an entry with other bytes", func(fx *fixture) {
			fx.write(fileA, base[0], base[1], entry("e2", "e1", "EDITED"), entry("e3", "e2", "new"))
		}, append(base, entry("e3", "e2", "new")), 1},
		{"replaced by a new file under its name", func(fx *fixture) {
			p := filepath.Join(fx.root, filepath.FromSlash(fileA))
			require.NoError(fx.t, os.WriteFile(p+".new", []byte(joinLines(append(base, entry("e3", "e2", "new")))), 0o644))
			require.NoError(fx.t, os.Rename(p+".new", p))
		}, append(base, entry("e3", "e2", "new")), 0},
		{"same length, other header bytes", func(fx *fixture) {
			h := strings.Replace(base[0], `"/home/u/proj"`, `"/home/u/PROJ"`, 1)
			fx.write(fileA, h, base[1], base[2])
		}, base, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.write(fileA, base...)
			require.NoError(t, fx.once())
			fx.take("")
			tt.rewrite(fx)
			err := fx.once()
			if tt.name == "same length, other header bytes" {
				require.ErrorIs(t, err, follow.ErrStuck, "a header the store holds with other bytes stops the file")
			} else {
				require.NoError(t, err)
			}
			requireOnce(t, fx.remote, refOf("s1"), tt.want...)
			require.Len(t, fx.take(follow.EventConflict), tt.conflicts)
		})
	}
}

// TestFollower_DeletedFile: a file removed locally is forgotten (reported);
// the bucket keeps its session, and the file restored under its name later
// uploads nothing twice.
func TestFollower_DeletedFile(t *testing.T) {
	fx := newFixture(t)
	lines := []string{header("s1"), entry("e1", "", "hi")}
	p := fx.write(fileA, lines...)
	require.NoError(t, fx.once())
	require.NoError(t, os.Remove(p))
	require.NoError(t, fx.once())
	removed := fx.take(follow.EventRemoved)
	require.Len(t, removed, 1)
	require.Contains(t, removed[0].Message, "the bucket keeps session default/"+piFolder+"/s1")
	state, err := os.ReadFile(filepath.Join(fx.state, follow.StateFileName))
	require.NoError(t, err)
	require.NotContains(t, string(state), "s1.jsonl", "the state forgets the file")
	requireOnce(t, fx.remote, refOf("s1"), lines...)

	fx.write(fileA, append(lines, entry("e2", "e1", "back"))...)
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), append(lines, entry("e2", "e1", "back"))...)
}

// TestFollower_ForeignFiles: files of other programs are ignored and reported
// once; hidden files and directories are not even looked at.
func TestFollower_ForeignFiles(t *testing.T) {
	fx := newFixture(t)
	fx.write("notes.txt", "hello")
	fx.write(piFolder+"/other.jsonl", `{"level":"info","msg":"a log"}`)
	fx.write(piFolder+"/binary.jsonl", "\x00\x01\x02")
	fx.write(piFolder+"/.swap.jsonl", header("hidden"))
	fx.write(".cache/x.jsonl", header("hidden2"))
	fx.write(fileA, header("s1"))
	require.NoError(t, fx.once())
	ignored := fx.take(follow.EventIgnored)
	var files []string
	for _, ev := range ignored {
		files = append(files, ev.File)
	}
	require.ElementsMatch(t, []string{"notes.txt", piFolder + "/other.jsonl", piFolder + "/binary.jsonl"}, files)
	require.NoError(t, fx.once())
	require.Len(t, fx.take(follow.EventIgnored), 3, "a new process reports them again, once")
	requireOnce(t, fx.remote, refOf("s1"), header("s1"))
	for _, s := range []string{"hidden", "hidden2", "other"} {
		require.Empty(t, fx.remote.all(refOf(s)))
	}
}

// TestFollower_Legacy: a version 1 file waits for Pi to migrate it (reported
// once); once Pi rewrote it as version 3 (new ids), exactly the rewritten
// file's entries are uploaded.
func TestFollower_Legacy(t *testing.T) {
	fx := newFixture(t)
	f := fx.open()
	fx.write(fileA, `{"type":"session","id":"s1","timestamp":"2026-01-02T03:04:05.678Z","cwd":"/home/u/proj"}`,
		`{"type":"message","timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"hi"}}`)
	require.NoError(t, f.Once(t.Context()))
	require.NoError(t, f.Once(t.Context()))
	legacy := fx.take(follow.EventLegacy)
	require.Len(t, legacy, 1)
	require.Contains(t, legacy[0].Message, "waiting for Pi to migrate it")
	require.Equal(t, 1, f.Status().Legacy)
	require.Empty(t, fx.remote.all(refOf("s1")))

	migrated := []string{header("s1"), entry("a1b2c3d4", "", "hi")}
	fx.write(fileA, migrated...) // Pi's _rewriteFile: truncate, write all
	require.NoError(t, f.Once(t.Context()))
	requireOnce(t, fx.remote, refOf("s1"), migrated...)
	require.Equal(t, 0, f.Status().Legacy)
	require.Equal(t, 1, f.Status().Following)
}

// TestFollower_Sessions: the agent is the folder holding the file (or
// --agent), the session the header's id, both mapped to valid ids; a file
// directly in the root takes the root's name.
func TestFollower_Sessions(t *testing.T) {
	tests := []struct {
		name, agent, file, headerID string
		want                        transcript.TranscriptRef
	}{
		{"Pi's folder", "", piFolder + "/x.jsonl", "0195f0c1-a", refOf("0195f0c1-a")},
		{"fixed agent", "coder", piFolder + "/x.jsonl", "s2", transcript.TranscriptRef{Namespace: "default", AgentID: "coder", SessionID: "s2"}},
		{"file in the root", "", "x.jsonl", "s3", transcript.TranscriptRef{Namespace: "default", AgentID: "sessions", SessionID: "s3"}},
		{"an id Pi accepts and the store does not", "", "L7/x.jsonl", "a..b", transcript.TranscriptRef{Namespace: "default", AgentID: "%4C7", SessionID: "a.%2Eb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.tune = func(c *follow.Config) { c.Agent = tt.agent }
			fx.write(tt.file, header(tt.headerID))
			require.NoError(t, fx.once())
			requireOnce(t, fx.remote, tt.want, header(tt.headerID))
		})
	}
}

// TestFollower_HeaderConflict: a session the store holds under another header
// (another file's session under the same name) takes nothing of the file.
func TestFollower_HeaderConflict(t *testing.T) {
	fx := newFixture(t)
	other := strings.Replace(header("s1"), "2026-01-02", "2025-12-31", 1)
	fx.remote.segments[refOf("s1")] = [][][]byte{{[]byte(other)}}
	fx.write(fileA, header("s1"), entry("e1", "", "hi"))
	err := fx.once()
	require.ErrorIs(t, err, follow.ErrStuck)
	require.Len(t, fx.take(follow.EventConflict), 1)
	requireOnce(t, fx.remote, refOf("s1"), other)
}

// TestFollower_MalformedLines: blank lines are skipped silently; a line that
// is not an entry and a second header are skipped and reported.
func TestFollower_MalformedLines(t *testing.T) {
	fx := newFixture(t)
	fx.write(fileA, header("s1"), "", "   ", `{"no":"id"}`, header("s2"), entry("e1", "", "hi"))
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"))
	mal := fx.take(follow.EventMalformed)
	require.Len(t, mal, 2)
	require.Contains(t, mal[1].Message, "a second session header")
}

// TestFollower_Windows: a file larger than MaxBatchBytes goes up in several
// segments, each line once, in order.
func TestFollower_Windows(t *testing.T) {
	fx := newFixture(t)
	fx.tune = func(c *follow.Config) { c.MaxBatchBytes = 400 }
	lines := []string{header("s1")}
	for i := range 20 {
		lines = append(lines, entry("e"+string(rune('a'+i)), "", strings.Repeat("x", 50)))
	}
	fx.write(fileA, lines...)
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), lines...)
	require.Greater(t, fx.remote.segmentCount(refOf("s1")), 3)
}

// TestFollower_SymlinkedRoot: a root that is a symbolic link to the sessions
// directory is followed through it.
func TestFollower_SymlinkedRoot(t *testing.T) {
	fx := newFixture(t)
	real := filepath.Join(t.TempDir(), "real")
	require.NoError(t, os.MkdirAll(real, 0o755))
	require.NoError(t, os.Symlink(real, fx.root))
	fx.write(fileA, header("s1"), entry("e1", "", "hi"))
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"))
	require.Empty(t, fx.take(follow.EventIgnored))
}

// TestFollower_OnceGivesUp: with an uploader that keeps failing, Once reports
// the file stuck after one attempt, also for a file read in several batches.
func TestFollower_OnceGivesUp(t *testing.T) {
	fx := newFixture(t)
	fx.tune = func(c *follow.Config) { c.MaxBatchBytes = 100 }
	fx.remote.failNext = 1 << 30
	fx.write(fileA, header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"))
	require.ErrorIs(t, fx.once(), follow.ErrStuck)
	require.Empty(t, fx.remote.all(refOf("s1")))
	require.Equal(t, 0, fx.remote.uploads)
}

// TestFollower_LineOverTheEntryLimit: a complete line over the store's entry
// limit is skipped and reported once, however it falls in the reads (inside a
// window of lines, longer than a window, longer than the pieces it is scanned
// in), and the lines after it are uploaded. The offset recorded is past it,
// so a restart neither reads it again nor reports it again.
func TestFollower_LineOverTheEntryLimit(t *testing.T) {
	const limit = 1024
	tests := []struct {
		name     string
		window   int // Config.MaxBatchBytes (0: the default)
		bigBytes int
	}{
		{"inside a window", 0, 4 << 10},
		{"longer than a window", 512, 4 << 10},
		{"longer than the pieces it is scanned in", 512, 3<<20 + 17},
		{"just over the limit", 512, limit + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.maxEntry = limit
			fx.tune = func(c *follow.Config) { c.MaxBatchBytes = tt.window }
			big := entry("big", "e1", "")
			big = big[:len(big)-3] + strings.Repeat("x", tt.bigBytes-len(big)) + `"}}`
			require.Len(t, big, tt.bigBytes)
			fit := entry("fit", "e1", "")
			fit = fit[:len(fit)-3] + strings.Repeat("y", limit-len(fit)) + `"}}` // exactly at the limit
			before := []string{header("s1"), entry("e1", "", "hi")}
			p := fx.write(fileA, append(before, big, fit, entry("e2", "e1", "after"))...)

			require.NoError(t, fx.once())
			requireOnce(t, fx.remote, refOf("s1"), append(before, fit, entry("e2", "e1", "after"))...)
			mal := fx.take(follow.EventMalformed)
			require.Len(t, mal, 1)
			require.Equal(t, int64(len(joinLines(before))), mal[0].Offset)
			require.Contains(t, mal[0].Message, "entry limit")
			require.NotContains(t, mal[0].Message, "as Pi skips it")

			st, err := os.Stat(p)
			require.NoError(t, err)
			data, err := os.ReadFile(filepath.Join(fx.state, follow.StateFileName))
			require.NoError(t, err)
			require.Contains(t, string(data), fmt.Sprintf(`"offset":%d,`, st.Size()), "the offset is past the skipped line")

			fx.appendRaw(fileA, entry("e3", "e2", "later")+"\n")
			require.NoError(t, fx.once()) // a restart
			requireOnce(t, fx.remote, refOf("s1"), append(before, fit, entry("e2", "e1", "after"), entry("e3", "e2", "later"))...)
			require.Empty(t, fx.take(follow.EventMalformed), "not reported again")
		})
	}
}

// TestFollower_TornLineOverTheEntryLimit: a line over the entry limit without
// its newline yet is a torn line like any other: it waits (it may yet be
// anything), and once its newline comes it is skipped and the lines after it
// are uploaded, by the process that saw it torn and by a restarted one.
func TestFollower_TornLineOverTheEntryLimit(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			fx := newFixture(t)
			fx.maxEntry = 1024
			fx.tune = func(c *follow.Config) { c.MaxBatchBytes = 512 }
			before := []string{header("s1"), entry("e1", "", "hi")}
			fx.write(fileA, before...)
			fx.appendRaw(fileA, `{"type":"custom","id":"big","parentId":"e1","data":"`+strings.Repeat("x", 5000))
			f := fx.open()
			require.NoError(t, f.Once(t.Context()))
			requireOnce(t, fx.remote, refOf("s1"), before...)
			require.Empty(t, fx.take(follow.EventMalformed), "not skipped before its newline")

			fx.appendRaw(fileA, strings.Repeat("x", 3000)+`"}`+"\n"+entry("e2", "e1", "after")+"\n")
			if restart {
				require.NoError(t, f.Close())
				f = fx.open()
			}
			require.NoError(t, f.Once(t.Context()))
			requireOnce(t, fx.remote, refOf("s1"), append(before, entry("e2", "e1", "after"))...)
			mal := fx.take(follow.EventMalformed)
			require.Len(t, mal, 1)
			require.Contains(t, mal[0].Message, "entry limit")
		})
	}
}
