package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// TestFollowPi16_KilledAtRandom: Pi 1.6's own
// SessionManager writes several sessions at once into a fresh sessions root
// (branches, compactions, and a version 1 file that Pi migrates and rewrites in
// place), while `transcript follow` uploads them to MinIO and is killed with
// SIGKILL at random moments (20 times or more) and started again. Afterwards
// the bucket holds every entry of Pi's files exactly once, byte for byte (and
// nothing of the version 1 file before Pi migrated it), and `restore --layout
// pi` into an empty root gives the same files, which Pi lists, resumes and
// opens with the same entries and context as the originals. The seed of the
// run is logged; TRANSCRIPT_FOLLOW_SEED repeats it.
func TestFollowPi16_KilledAtRandom(t *testing.T) {
	node := needPiPackage(t, "@earendil-works/pi-coding-agent")
	run := followKilledAtRandom(t, node, killedRun{script: "pi16-follow.mjs", args: []string{"12", "6"}, stream: 28,
		minKills: 20, minFiles: 7, filesAre: "six sessions and the migrated one"})
	requirePiAgrees(t, node, "pi16-follow.mjs", run.root, run.restored, len(run.files), 2)
}

// killedRun is a run of followKilledAtRandom: Pi's harness script (under
// oracleDir) writes sessions with "write SEED args...", follow is killed at
// least minKills times, and at least minFiles session files (what filesAre
// says they are) must be stored and restored. stream tells the runs' random
// numbers apart.
type killedRun struct {
	script   string
	args     []string
	stream   uint64
	minKills int
	minFiles int
	filesAre string

	// Set by the run: the sessions root Pi wrote, the root restore wrote, and
	// the session files (relative to both).
	root, restored string
	files          []string
}

// followKilledAtRandom has Pi's harness write sessions into a fresh sessions
// root while `transcript follow` uploads them to MinIO and is killed with
// SIGKILL at random moments and started again, then follows once more to the
// end, requires the bucket to hold every line of Pi's files exactly once
// (requireStoredOnce), and `restore --layout pi` into an empty root to give the
// same files byte for byte. The seed is logged; TRANSCRIPT_FOLLOW_SEED repeats
// a run.
func followKilledAtRandom(t *testing.T, node string, r killedRun) killedRun {
	t.Helper()
	store := s3Backend().fresh(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TRANSCRIPT_FOLLOW_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("TRANSCRIPT_FOLLOW_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, r.stream))
	agentDir := t.TempDir()
	r.root = filepath.Join(agentDir, "sessions")
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	harness := exec.CommandContext(ctx, node, append([]string{r.script, "write", strconv.FormatUint(seed%(1<<31), 10)}, r.args...)...)
	harness.Dir = oracleDir
	harness.Env = append(os.Environ(), "PI_CODING_AGENT_DIR="+agentDir)
	var hout, herr bytes.Buffer
	harness.Stdout, harness.Stderr = &hout, &herr
	require.NoError(t, harness.Start())
	written := make(chan error, 1)
	go func() { written <- harness.Wait() }()

	follow := []string{"follow", "--store", store, "--state-dir", state, "--batch", "20ms", "--rescan", "250ms", r.root}
	kills, writing := 0, true
	for writing || kills < r.minKills {
		require.NoError(t, ctx.Err(), "after %d kills", kills)
		cmd := exec.Command(binary, follow...)
		cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(10+rng.IntN(600)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		require.NotContains(t, stderr.String(), "stuck", "follower %d", kills)
		kills++
		select {
		case err := <-written:
			require.NoError(t, err, "Pi's harness: %s", herr.String())
			writing = false
		default:
		}
	}
	t.Logf("%d kills", kills)

	res := cliWith(t, cmdOpts{}, append([]string{"follow", "--once", "--json"}, follow[1:]...)...)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	r.files = requireStoredOnce(t, store, r.root)
	require.GreaterOrEqual(t, len(r.files), r.minFiles, r.filesAre)

	r.restored = t.TempDir()
	res = cliWith(t, cmdOpts{}, "restore", "--layout", "pi", "--out", r.restored, "--store", store)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	for _, rel := range r.files {
		want, err := os.ReadFile(filepath.Join(r.root, rel))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(r.restored, rel))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "%s restored byte for byte", rel)
	}
	return r
}

// requireStoredOnce requires the store at url to hold, for every session file
// under root, each of its lines exactly once across the session's segments,
// with the same bytes, and nothing else; it returns the files (relative).
func requireStoredOnce(t *testing.T, url, root string) []string {
	t.Helper()
	ctx := t.Context()
	s, err := cmdcli.OpenStore(ctx, url, "", cmdcli.ReadOnly)
	require.NoError(t, err)
	defer s.Close()
	var files []string
	want := map[transcript.TranscriptRef]map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		lines := fileLines(t, p)
		h, err := pi.ParseHeader([]byte(lines[0]))
		require.NoError(t, err, rel)
		require.Equal(t, pi.CurrentVersion, h.Version(), "%s: Pi migrated it", rel)
		ref := transcript.TranscriptRef{Namespace: "default", AgentID: filepath.Base(filepath.Dir(p)), SessionID: h.ID()}
		want[ref] = map[string]string{}
		for _, l := range lines {
			e, err := transcript.ParseEntry([]byte(l))
			require.NoError(t, err)
			want[ref][e.ID] = l
		}
		return nil
	}))
	agents, err := s.ListAgents(ctx, "default")
	require.NoError(t, err)
	stored := 0
	for _, agent := range agents {
		sessions, err := s.ListSessions(ctx, "default", agent)
		require.NoError(t, err)
		for _, sid := range sessions {
			ref := transcript.TranscriptRef{Namespace: "default", AgentID: agent, SessionID: sid}
			w, ok := want[ref]
			require.True(t, ok, "the store holds session %s that no file holds", ref)
			infos, err := s.ListSegments(ctx, ref)
			require.NoError(t, err)
			seen := map[string]int{}
			for i, info := range infos {
				seg, err := s.ReadSegment(ctx, info.Key)
				require.NoError(t, err)
				for j, raw := range seg.Entries {
					e, err := transcript.ParseEntry(raw)
					require.NoError(t, err)
					seen[e.ID]++
					require.Equal(t, w[e.ID], string(raw), "%s: entry %s stored with other bytes (or not in the file)", ref, e.ID)
					if i == 0 && j == 0 {
						_, err := pi.ParseHeader(raw)
						require.NoError(t, err, "%s: the first segment starts with the header", ref)
					}
				}
			}
			for id := range w {
				require.Equal(t, 1, seen[id], "%s: entry %s stored %d times", ref, id, seen[id])
			}
			require.Len(t, seen, len(w), "%s: the store holds what the file holds", ref)
			stored++
		}
	}
	require.Equal(t, len(want), stored, "every session file is a session in the store")
	entries := 0
	for _, w := range want {
		entries += len(w)
	}
	t.Logf("%d sessions, %d entries (headers included), each stored once", stored, entries)
	return files
}

// fileLines returns the non-blank lines of the file at p.
func fileLines(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines = append(lines, sc.Text())
		}
	}
	require.NoError(t, sc.Err())
	return lines
}

// requirePiAgrees has Pi's check script (pi16-follow.mjs, pi058-follow.mjs)
// list, resume and open every session folder of original and restored, and
// requires the same answers, for files files in at least minFolders folders.
func requirePiAgrees(t *testing.T, node, script, original, restored string, files, minFolders int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.CommandContext(t.Context(), node, script, "check", original, restored, out)
	cmd.Dir = oracleDir
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var rep struct {
		Folders, Files int
		Mismatches     []json.RawMessage
	}
	require.NoError(t, json.Unmarshal(data, &rep))
	require.Empty(t, rep.Mismatches, "Pi sees the restored sessions as the originals")
	require.Equal(t, files, rep.Files)
	require.GreaterOrEqual(t, rep.Folders, minFolders)
}
