package follow_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
)

// stateOf reads the state file of dir as a map.
func stateOf(t *testing.T, dir string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, follow.StateFileName))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	return doc
}

// copyState copies the state directory src into a new one and returns it.
func copyState(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// TestFollower_CopiedStateTakesNewID: a state file written on another
// machine (another host name or machine id) or in another state directory
// is a copy (a home directory synchronised, a VM image cloned): the
// follower takes a new id, puts its own marker, says so, and asks whether
// the store holds the session of each file, idle or not. A restart on the
// same machine keeps the id and asks nothing of an idle file; so does one
// that cannot tell its machine id any more, and one that reads a state file
// of an older version (which records neither), whose place it then records.
func TestFollower_CopiedStateTakesNewID(t *testing.T) {
	tests := []struct {
		name   string
		change func(fx *fixture, m *follow.Machine)
		newID  bool
	}{
		{"restart", func(*fixture, *follow.Machine) {}, false},
		{"another host", func(_ *fixture, m *follow.Machine) { m.Host = "b" }, true},
		{"another machine id", func(_ *fixture, m *follow.Machine) { m.ID = "y" }, true},
		{"state directory copied", func(fx *fixture, _ *follow.Machine) { fx.state = copyState(fx.t, fx.state) }, true},
		{"machine id unreadable now", func(_ *fixture, m *follow.Machine) { m.ID = "" }, false},
		{"state of an older version", func(fx *fixture, _ *follow.Machine) {
			doc := stateOf(fx.t, fx.state)
			delete(doc, "host")
			delete(doc, "machine")
			delete(doc, "stateDir")
			data, err := json.Marshal(doc)
			require.NoError(fx.t, err)
			require.NoError(fx.t, os.WriteFile(filepath.Join(fx.state, follow.StateFileName), data, 0o644))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			m := follow.Machine{Host: "a", ID: "x"}
			fx.tune = func(c *follow.Config) { c.Machine = func() follow.Machine { return m } }
			fx.write(fileA, header("s1"), entry("e1", "", "hi"))
			require.NoError(t, fx.once())
			was := stateOf(t, fx.state)["follower"]
			require.NotEmpty(t, was)
			fx.take(follow.EventCopied)

			tt.change(fx, &m)
			checks := fx.remote.existsChecks
			require.NoError(t, fx.once())
			doc := stateOf(t, fx.state)
			copied := fx.take(follow.EventCopied)
			if !tt.newID {
				require.Equal(t, was, doc["follower"])
				require.Empty(t, copied)
				require.Equal(t, checks, fx.remote.existsChecks, "an idle file is not asked about")
			} else {
				require.NotEqual(t, was, doc["follower"])
				require.Len(t, copied, 1)
				require.Contains(t, copied[0].Message, doc["follower"])
				require.Greater(t, fx.remote.existsChecks, checks, "every file is asked about")
			}
			fx.remote.mu.Lock()
			require.Contains(t, fx.remote.markers, "default/"+doc["follower"].(string))
			fx.remote.mu.Unlock()
			require.Equal(t, m.Host, doc["host"])
			if m.ID != "" {
				require.Equal(t, m.ID, doc["machine"])
			}
			require.NotEmpty(t, doc["stateDir"])

			// Again on the same machine: the id stays.
			require.NoError(t, fx.once())
			require.Equal(t, doc["follower"], stateOf(t, fx.state)["follower"])
			require.Empty(t, fx.take(follow.EventCopied))
		})
	}
}

// TestFollower_CopiedStateRefillsAfterEmptying: a second machine whose
// state directory was copied from the first (with its home directory) goes
// on with sessions of its own. After the bucket is emptied, each machine
// finds its own marker gone and refills its idle sessions, whichever looks
// first: sharing the first machine's id, the second found the marker the
// first had put back, and its idle session stayed lost.
func TestFollower_CopiedStateRefillsAfterEmptying(t *testing.T) {
	a := newFixture(t)
	a.write(fileA, header("s1"), entry("e1", "", "hi"))
	require.NoError(t, a.once())

	b := newFixture(t)
	b.remote = a.remote
	// The home directory synchronised: the sessions and the state. (The
	// state names the root it was written for; the second machine's is at
	// the same path, a test's is not, so its files are reconciled.)
	b.state = copyState(t, a.state)
	require.NoError(t, os.CopyFS(b.root, os.DirFS(a.root)))
	b.write(fileB, header("s2"), entry("f1", "", "hey"))
	require.NoError(t, b.once())
	requireOnce(t, b.remote, refOf("s2"), header("s2"), entry("f1", "", "hey"))

	a.remote.wipe()
	require.NoError(t, a.once())
	requireOnce(t, a.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"))
	require.NoError(t, b.once())
	requireOnce(t, b.remote, refOf("s2"), header("s2"), entry("f1", "", "hey"))
	require.True(t, b.saw(follow.EventLost, "no longer holds this follower's marker"))
}

// TestThisMachine: the machine is named by its host name and a keyed hash of
// its machine id, never the id itself (machine-id(5) calls it confidential).
func TestThisMachine(t *testing.T) {
	m := follow.ThisMachine()
	host, err := os.Hostname()
	require.NoError(t, err)
	require.Equal(t, host, m.Host)
	id, err := os.ReadFile("/etc/machine-id")
	if err != nil || len(id) == 0 {
		t.Skip("no /etc/machine-id here")
	}
	require.Len(t, m.ID, 32)
	require.NotContains(t, string(id), m.ID)
	require.Equal(t, m, follow.ThisMachine(), "stable")
}

// TestFollower_GivenID: a state directory that does not last (a new one for
// each run, as a cron job in a fresh container has) makes a new follower,
// and a new marker, each run; with Config.FollowerID the runs share one. A
// state written under another id says nothing of the given one's marker,
// which is put without a loss reported. An invalid id is refused.
func TestFollower_GivenID(t *testing.T) {
	for _, given := range []string{"", "f-cron.host1"} {
		t.Run("id "+given, func(t *testing.T) {
			fx := newFixture(t)
			fx.tune = func(c *follow.Config) { c.FollowerID = given }
			fx.write(fileA, header("s1"), entry("e1", "", "hi"))
			for range 3 {
				fx.state = t.TempDir()
				require.NoError(t, fx.once())
				if given != "" {
					require.Equal(t, given, stateOf(t, fx.state)["follower"])
				}
			}
			fx.remote.mu.Lock()
			markers := len(fx.remote.markers)
			fx.remote.mu.Unlock()
			if given == "" {
				require.Equal(t, 3, markers, "a marker per run")
			} else {
				require.Equal(t, 1, markers, "one marker for every run")
			}
			require.False(t, fx.saw(follow.EventLost, ""))
		})
	}
	t.Run("the state's id is another", func(t *testing.T) {
		fx := newFixture(t)
		fx.write(fileA, header("s1"), entry("e1", "", "hi"))
		require.NoError(t, fx.once())
		fx.tune = func(c *follow.Config) { c.FollowerID = "f-given" }
		require.NoError(t, fx.once())
		require.Equal(t, "f-given", stateOf(t, fx.state)["follower"])
		fx.remote.mu.Lock()
		require.Contains(t, fx.remote.markers, "default/f-given")
		fx.remote.mu.Unlock()
		require.False(t, fx.saw(follow.EventLost, ""))
		require.False(t, fx.saw(follow.EventCopied, ""))
	})
	t.Run("invalid", func(t *testing.T) {
		_, err := follow.New(follow.Config{Root: t.TempDir(), StateDir: t.TempDir(), Uploader: newRemote(), Store: newRemote(),
			FollowerID: "no spaces"})
		require.ErrorContains(t, err, "follower id")
	})
}
