package follow_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/internal/fsutil"
)

// TestFollower_CrashPoints: a hand-over that fails before the uploader
// accepted the batch, or after (a crash between the outbox append and the
// state write, the uploader keeping the lines pending or storing them), is
// taken up by the next process without uploading a line twice or skipping one.
func TestFollower_CrashPoints(t *testing.T) {
	tests := []struct {
		name           string
		acceptThenFail bool
		direct         bool // the uploader stores at once (else it keeps the batch pending)
	}{
		{"not accepted", false, false},
		{"accepted, pending in the outbox", true, false},
		{"accepted and stored", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.remote.direct = tt.direct
			lines := []string{header("s1"), entry("e1", "", "hi")}
			fx.write(fileA, lines...)
			require.NoError(t, fx.once())
			fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
			fx.remote.failNext, fx.remote.acceptThenFail = 1, tt.acceptThenFail
			require.ErrorIs(t, fx.once(), follow.ErrStuck, "the failed hand-over is reported")
			require.Len(t, fx.take(follow.EventError), 1)

			data, err := os.ReadFile(filepath.Join(fx.state, follow.StateFileName))
			require.NoError(t, err)
			require.Contains(t, string(data), `"uploading":`, "the intent stays until the lines are handed over")

			fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
			require.NoError(t, fx.once()) // the restart
			fx.remote.flush()
			requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"), entry("e3", "e2", "more"))
			data, err = os.ReadFile(filepath.Join(fx.state, follow.StateFileName))
			require.NoError(t, err)
			require.NotContains(t, string(data), `"uploading":`)
		})
	}
}

// TestFollower_RestartFromState: a new process resumes each file at its
// recorded offset once its checksum matches, without reading the store; a
// file changed while no follower ran is reconciled instead.
func TestFollower_RestartFromState(t *testing.T) {
	fx := newFixture(t)
	lines := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo")}
	fx.write(fileA, lines...)
	require.NoError(t, fx.once())

	// A resumed file does not need the store's entries (it only checks that
	// the store still holds its session).
	reads := fx.remote.reads
	fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
	require.NoError(t, fx.once())
	require.Empty(t, fx.take(follow.EventRewritten))
	require.Equal(t, reads, fx.remote.reads, "resumed at the offset, without reading the session")
	requireOnce(t, fx.remote, refOf("s1"), append(lines, entry("e3", "e2", "more"))...)

	// Changed while stopped (same size, other bytes before the offset).
	fx.write(fileA, lines[0], entry("e1", "", "HI"), lines[2], entry("e3", "e2", "more"), entry("e4", "e3", "new"))
	require.NoError(t, fx.once())
	require.Len(t, fx.take(follow.EventRewritten), 1)
	requireOnce(t, fx.remote, refOf("s1"), append(lines, entry("e3", "e2", "more"), entry("e4", "e3", "new"))...)
}

// TestFollower_CorruptState: a state file that cannot be read (torn, garbage,
// another format) is moved aside and reported; every file is then reconciled
// against the store, so nothing is uploaded twice and nothing is skipped.
func TestFollower_CorruptState(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(data []byte) []byte
	}{
		{"torn in half", func(d []byte) []byte { return d[:len(d)/2] }},
		{"empty", func([]byte) []byte { return nil }},
		{"garbage", func([]byte) []byte { return []byte("\x00\xff not json") }},
		{"another format", func(d []byte) []byte { return []byte(strings.Replace(string(d), `"format":1`, `"format":9`, 1)) }},
		{"unknown field", func(d []byte) []byte { return []byte(strings.Replace(string(d), `"format":1`, `"format":1,"x":1`, 1)) }},
		{"negative offset", func(d []byte) []byte {
			return []byte(strings.Replace(string(d), `"offset":`, `"offset":-`, 1))
		}},
		{"a path out of the root", func(d []byte) []byte { return []byte(strings.Replace(string(d), `"--home`, `"../--home`, 1)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			lines := []string{header("s1"), entry("e1", "", "hi")}
			fx.write(fileA, lines...)
			require.NoError(t, fx.once())
			path := filepath.Join(fx.state, follow.StateFileName)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, tt.corrupt(data), 0o644))
			fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
			fx.take("")

			require.NoError(t, fx.once())
			errs := fx.take(follow.EventError)
			require.Len(t, errs, 1)
			require.Contains(t, errs[0].Message, "moved aside")
			aside, err := filepath.Glob(path + ".corrupt-*")
			require.NoError(t, err)
			require.Len(t, aside, 1)
			requireOnce(t, fx.remote, refOf("s1"), append(lines, entry("e2", "e1", "yo"))...)
		})
	}
}

// TestFollower_ResumesAReconcile: a reconcile cut short by a crash (a file
// read in several batches) is recorded in the state and goes on after a
// restart: the lines past the offset the store holds are not uploaded again.
func TestFollower_ResumesAReconcile(t *testing.T) {
	fx := newFixture(t)
	lines := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"), entry("e3", "e2", "x")}
	p := fx.write(fileA, lines...)
	for _, l := range lines {
		fx.remote.segments[refOf("s1")] = append(fx.remote.segments[refOf("s1")], [][]byte{[]byte(l)})
	}
	// The state a crash leaves after the first batch of a reconcile.
	offset := len(lines[0]) + 1 + len(lines[1]) + 1
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	st, err := os.Stat(p)
	require.NoError(t, err)
	doc := map[string]any{"format": 1, "root": fx.root, "files": map[string]any{fileA: map[string]any{
		"ns": "default", "agent": piFolder, "session": "s1", "inode": inode(st), "offset": offset,
		"sum": fmt.Sprintf("%016x", xxhash.Sum64(data[:offset])), "reconcile": true}}}
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(fx.state, follow.StateFileName), raw, 0o644))

	require.NoError(t, fx.once())
	require.Empty(t, fx.take(follow.EventRewritten), "the state was taken as it is")
	requireOnce(t, fx.remote, refOf("s1"), lines...)
}

// TestFollower_StateDirLocked: one follower at a time per state directory.
func TestFollower_StateDirLocked(t *testing.T) {
	fx := newFixture(t)
	fx.open()
	_, err := follow.New(follow.Config{Root: fx.root, StateDir: fx.state, Uploader: fx.remote, Store: fx.remote})
	require.ErrorIs(t, err, fsutil.ErrLocked)
}

// TestFollower_ResumesAnIntentAtOffsetZero: a crash during a file's first
// hand-over leaves the state naming it at offset 0 with an intent. The next
// process takes it up without an error (there is no prefix to check) and
// reconciles it from its start: what the uploader accepted before the crash is
// not handed over again, the rest is.
func TestFollower_ResumesAnIntentAtOffsetZero(t *testing.T) {
	tests := []struct {
		name     string
		accepted int // lines the uploader accepted before the crash
	}{
		{"nothing accepted", 0},
		{"the header accepted", 1},
		{"everything accepted", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.remote.direct = false
			lines := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo")}
			p := fx.write(fileA, lines...)
			for _, l := range lines[:tt.accepted] {
				fx.remote.pending[refOf("s1")] = append(fx.remote.pending[refOf("s1")], [][]byte{[]byte(l)})
			}
			st, err := os.Stat(p)
			require.NoError(t, err)
			doc := map[string]any{"format": 1, "root": fx.root, "files": map[string]any{fileA: map[string]any{
				"ns": "default", "agent": piFolder, "session": "s1", "inode": inode(st), "offset": 0,
				"sum": fmt.Sprintf("%016x", xxhash.Sum64(nil)), "uploading": st.Size()}}}
			raw, err := json.Marshal(doc)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(fx.state, follow.StateFileName), raw, 0o644))

			require.NoError(t, fx.once())
			require.Empty(t, fx.take(follow.EventError), "no error: nothing is wrong with the state")
			requireOnce(t, fx.remote, refOf("s1"), lines...)
		})
	}
}
