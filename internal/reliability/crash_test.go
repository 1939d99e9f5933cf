package reliability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// Environment of a child process (the test binary started again).
const (
	childEnv        = "RELIABILITY_CHILD" // "crash" in the crash-test writer
	crashStoreEnv   = "RELIABILITY_STORE" // bucket URL (bucketurl)
	crashRootEnv    = "RELIABILITY_ROOT"  // SessionTree root
	crashOutboxEnv  = "RELIABILITY_OUTBOX"
	crashRoundEnv   = "RELIABILITY_ROUND"
	crashCompactEnv = "RELIABILITY_COMPACT" // "1": run Store.Compact alongside
	crashSessions   = 3
	crashAgent      = "crash"
)

// Lines the child prints. ACK lines are printed only after Flush returned: those
// entries must never be lost.
const (
	lineAck          = "ACK "           // ACK {session} {id}
	lineFlush        = "FLUSH\n"        // a Flush starts
	lineCompact      = "COMPACT\n"      // a Store.Compact starts
	lineCompactDone  = "COMPACT-DONE\n" // it returned
	lineTorn         = "TORN "          // TORN {session} {bytes}: Load reported a torn tail
	lineSkipped      = "SKIPPED "       // SKIPPED {session} ...: Compact skipped or was contended
	childMaxLifetime = 30 * time.Second
)

func crashSessionID(i int) string { return fmt.Sprintf("s%d", i) }

// TestCrashChild is the writer process of TestCrash_KillWriter; it does nothing
// unless started by it. It opens crashSessions SessionTrees (loading what earlier,
// killed children left), writes turns to them with the async Mirror until it is
// killed, and optionally compacts the sessions in the store meanwhile.
func TestCrashChild(t *testing.T) {
	if os.Getenv(childEnv) != "crash" {
		t.Skip("run by TestCrash_KillWriter only")
	}
	ctx := context.Background()
	b, prefix, err := bucketurl.Open(ctx, os.Getenv(crashStoreEnv))
	require.NoError(t, err)
	// A random delay per PUT keeps uploads in flight when the kill comes.
	fb := faultbucket.Wrap(b)
	fb.SetDelay(faultbucket.OpPut, time.Duration(mrand.IntN(15))*time.Millisecond)
	store, err := transcript.New(transcript.Config{Bucket: fb, Prefix: prefix})
	require.NoError(t, err)
	round := os.Getenv(crashRoundEnv)
	w, err := transcript.NewWriter("crash-" + round)
	require.NoError(t, err)
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: os.Getenv(crashOutboxEnv),
		Workers: 2, MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	cfg := sessiontree.Config{Root: os.Getenv(crashRootEnv), Uploader: m, Store: store}
	var out sync.Mutex
	say := func(s string) {
		out.Lock()
		defer out.Unlock()
		_, err := os.Stdout.WriteString(s) // one write: a line is never split
		require.NoError(t, err)
	}
	trees := make([]*sessiontree.Tree, crashSessions)
	for i := range trees {
		tr, rep, err := sessiontree.Open(ctx, cfg, sessiontree.Identity{}, crashAgent, crashSessionID(i), sessiontree.HeaderOptions{})
		require.NoError(t, err, "local files of %s must load after a crash", crashSessionID(i))
		if rep.TornBytes > 0 {
			say(fmt.Sprintf("%s%s %d\n", lineTorn, crashSessionID(i), rep.TornBytes))
		}
		trees[i] = tr
	}
	deadline := time.Now().Add(childMaxLifetime) // bounded, should the parent never kill
	if os.Getenv(crashCompactEnv) == "1" {
		go func() {
			for i := 0; time.Now().Before(deadline); i++ {
				ref := trees[i%crashSessions].Ref()
				say(lineCompact)
				res, err := store.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 3, DeleteDelay: transcript.DeleteAtOnce})
				if err != nil {
					say(fmt.Sprintf("ERROR compact %s: %v\n", ref, err))
					os.Exit(3)
				}
				if res.Skipped != "" || res.Contended {
					// For explainMissing: an output dropped as a compaction of a
					// deleted session is where entries can go.
					say(fmt.Sprintf("%s%s contended=%v: %s\n", lineSkipped, ref, res.Contended, res.Skipped))
				}
				say(lineCompactDone)
				time.Sleep(time.Duration(mrand.IntN(10)) * time.Millisecond)
			}
		}()
	}
	for i := 0; time.Now().Before(deadline); i++ {
		s := mrand.IntN(crashSessions)
		tr := trees[s]
		var acks strings.Builder
		for k := range 1 + mrand.IntN(3) {
			msg, _ := json.Marshal(map[string]any{"role": "user", "content": fmt.Sprintf("round %s turn %d.%d %s", round, i, k, strings.Repeat("x", mrand.IntN(300)))})
			e, err := tr.AppendMessage(msg)
			require.NoError(t, err)
			fmt.Fprintf(&acks, "%s%s %s\n", lineAck, crashSessionID(s), e.ID())
		}
		say(lineFlush)
		require.NoError(t, tr.Flush(ctx))
		say(acks.String()) // acknowledged only after Flush returned
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// crashStats counts what the kills hit.
type crashStats struct {
	rounds, acked, midFlush, midCompaction, midJob, tornReported, tornInjected int
}

// TestCrash_KillWriter: a writer process is killed with
// SIGKILL at random moments of append, flush, upload and compaction, many times,
// and with it the compaction job (cmd/transcript-compact) that runs alongside.
// After every restart its local files load (a torn tail is reported, and saved to
// {file}.torn when the next flush repairs it); at the end every entry whose Flush
// returned is in the local files and, after the mirror drained the outbox, in the
// bucket, and both are prefix-closed trees.
func TestCrash_KillWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Run("file", func(t *testing.T) {
		// The compaction job, which starts before the first write, creates no store:
		// the store directory exists from the start, as a deployed one does.
		bucketDir := filepath.Join(t.TempDir(), "bucket")
		require.NoError(t, os.Mkdir(bucketDir, 0o755))
		runCrash(t, "file://"+bucketDir, 50)
	})
	t.Run("minio", func(t *testing.T) {
		srv := sharedS3(t)
		name := srv.newBucket(t, "rel-crash-")
		runCrash(t, fmt.Sprintf("s3://%s/crash?endpoint=%s&insecure=true", name, srv.endpoint), 20)
	})
}

func runCrash(t *testing.T, storeURL string, rounds int) {
	rng := seeded(t)
	dir := t.TempDir()
	root, outbox := filepath.Join(dir, "local"), filepath.Join(dir, "outbox")
	acked := map[string]map[string]bool{}
	var injected []tornTail
	var st crashStats
	var outputs []string                       // every child's output, for explainMissing
	budget := time.Now().Add(90 * time.Second) // the whole loop, whatever the machine
	jobBin := buildCmd(t, "transcript-compact")
	for round := 0; round < rounds && time.Now().Before(budget); round++ {
		job := startJobLoop(jobBin, storeURL)
		out := &syncBuffer{}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=crash", crashStoreEnv+"="+storeURL, crashRootEnv+"="+root,
			crashOutboxEnv+"="+outbox, crashRoundEnv+"="+strconv.Itoa(round), crashCompactEnv+"=1")
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		// Kill at a random moment after the first acknowledged flush.
		wait := time.Now().Add(30 * time.Second)
		for !strings.Contains(out.String(), lineAck) && time.Now().Before(wait) {
			select {
			case <-exited:
				t.Fatalf("round %d: the writer exited before it was killed:\n%s", round, out)
			case <-time.After(2 * time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			<-exited
			t.Fatalf("round %d: the writer exited before it was killed (%v):\n%s", round, cmd.ProcessState, out)
		}
		midJob, jobErr := job.kill()
		require.NoError(t, jobErr, "round %d: the compaction job failed", round)
		if midJob {
			st.midJob++
		}
		<-exited
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL,
			"round %d: the writer must die by SIGKILL, not exit:\n%s", round, out)
		st.rounds++
		st.record(out.String(), acked)
		outputs = append(outputs, out.String())
		// Every fifth round, tear the tail of a session file as a power loss would
		// (SIGKILL alone never tears a write to the page cache).
		if round%5 == 4 {
			injected = append(injected, injectTorn(t, rng, root, round))
			st.tornInjected++
		}
	}
	require.GreaterOrEqual(t, st.rounds, min(rounds, 10), "too few rounds in the time budget")
	require.NotZero(t, st.acked, "the writers acknowledged nothing")

	// Restart once more in this process: load, flush one entry per session (which
	// repairs the torn tails), drain the outbox.
	ctx := ctxTimeout(t, 2*time.Minute)
	b, prefix, err := bucketurl.Open(ctx, storeURL)
	require.NoError(t, err)
	store := newStore(t, b, prefix)
	w, err := transcript.NewWriter("crash-final")
	require.NoError(t, err)
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: outbox,
		MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	defer m.Close(ctx)
	cfg := sessiontree.Config{Root: root, Uploader: m, Store: store}
	trees := make([]*sessiontree.Tree, crashSessions)
	for i := range crashSessions {
		sid := crashSessionID(i)
		tr, _, err := sessiontree.Load(ctx, cfg, sessiontree.Identity{}, crashAgent, sid)
		require.NoError(t, err, "local files load")
		_, err = tr.MergeLog(ctx)
		require.NoError(t, err)
		for id := range acked[sid] {
			_, err := tr.Entry(id)
			require.NoError(t, err, "acknowledged entry %s of %s lost locally", id, sid)
		}
		requireTreeClosed(t, tr)
		trees[i] = tr
		_, err = tr.AppendMessage(json.RawMessage(`{"role":"user","content":"after the crashes"}`))
		require.NoError(t, err)
		require.NoError(t, tr.Flush(ctx))
	}
	for _, tt := range injected {
		saved, err := os.ReadFile(tt.path + sessiontree.TornSuffix)
		require.NoError(t, err, "torn tail of %s not saved", tt.path)
		require.Contains(t, string(saved), string(tt.tail)+"\n", "torn tail of %s not saved", tt.path)
	}
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.NoError(t, m.Close(ctx))
	stored, compacted := 0, 0
	for i := range crashSessions {
		ref := transcript.TranscriptRef{AgentID: crashAgent, SessionID: crashSessionID(i)}
		res, err := store.ReadAll(ctx, ref)
		require.NoError(t, err)
		require.Empty(t, res.Conflicts)
		require.Empty(t, res.Invalid)
		if err := prefixClosed(res); err != nil {
			explainMissing(t, ctx, store, ref, res, trees[i], outbox, outputs)
			require.NoError(t, err)
		}
		ids := entryIDs(res)
		for id := range acked[ref.SessionID] {
			require.True(t, ids[id], "acknowledged entry %s of %s lost in the bucket", id, ref)
		}
		stored += len(ids)
		for _, seg := range res.Segments {
			if seg.Level > 0 {
				compacted++
			}
		}
	}
	t.Logf("%d kills (%d mid-flush, %d mid-compaction in the writer, %d of a running transcript-compact job), %d entries acknowledged, %d stored, %d torn tails injected, %d torn tails reported by Load, %d compacted segments read; lost: 0",
		st.rounds, st.midFlush, st.midCompaction, st.midJob, st.acked, stored, st.tornInjected, st.tornReported, compacted)
}

// explainMissing logs where the parents res lacks are, so that a failure
// seen once in a hundred runs leaves its evidence: in the local tree or not,
// in which listed segments (each with its level and inputs), the lines of
// the children's outputs that name it, and what the outbox still holds.
func explainMissing(t *testing.T, ctx context.Context, store *transcript.Store, ref transcript.TranscriptRef,
	res *transcript.MergeResult, tr *sessiontree.Tree, outbox string, outputs []string) {
	t.Helper()
	ids := entryIDs(res)
	for _, e := range res.Entries {
		if e.ParentID == "" || ids[e.ParentID] {
			continue
		}
		p := e.ParentID
		_, lerr := tr.Entry(p)
		t.Logf("missing parent %s of %s (segment %s); in the local tree: %v", p, e.ID, e.Segment, lerr == nil)
		infos, err := store.ListSegments(ctx, ref)
		if err != nil {
			t.Logf("list: %v", err)
		}
		others := 0
		for _, in := range infos {
			seg, err := store.ReadSegment(ctx, in.Key)
			if err != nil {
				t.Logf("  %s: %v", in.Key, err)
				continue
			}
			hasP, hasC := false, false
			for _, raw := range seg.Entries {
				hasP = hasP || bytes.Contains(raw, []byte(`"id":"`+p+`"`))
				hasC = hasC || bytes.Contains(raw, []byte(`"id":"`+e.ID+`"`))
			}
			if hasP || hasC || seg.Meta.Level > 0 {
				t.Logf("  %s level %d, %d entries, %d inputs; parent %v child %v", in.Key, seg.Meta.Level, len(seg.Entries), len(seg.Meta.Inputs), hasP, hasC)
			} else {
				others++
			}
		}
		t.Logf("  and %d level-0 segments without either", others)
		for round, out := range outputs {
			for line := range strings.Lines(out) {
				if strings.Contains(line, p) || strings.Contains(line, e.ID) || strings.HasPrefix(line, "ERROR") ||
					strings.HasPrefix(line, lineSkipped+ref.String()) {
					t.Logf("  round %d: %s", round, strings.TrimSpace(line))
				}
			}
		}
		_ = filepath.WalkDir(outbox, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					t.Logf("  outbox %s (%d bytes)", path, fi.Size())
				}
			}
			return nil
		})
	}
}

// record adds the acknowledged ids of one child's output to acked and counts
// where the kill hit it.
func (st *crashStats) record(out string, acked map[string]map[string]bool) {
	complete := out[:strings.LastIndexByte(out, '\n')+1] // a torn last line is no ack
	inFlush, inCompact := false, false
	for line := range strings.Lines(complete) {
		switch {
		case line == lineFlush:
			inFlush = true
		case line == lineCompact:
			inCompact = true
		case line == lineCompactDone:
			inCompact = false
		case strings.HasPrefix(line, lineAck):
			inFlush = false
			f := strings.Fields(line)
			if acked[f[1]] == nil {
				acked[f[1]] = map[string]bool{}
			}
			acked[f[1]][f[2]] = true
			st.acked++
		case strings.HasPrefix(line, lineTorn):
			st.tornReported++
		}
	}
	if inFlush {
		st.midFlush++
	}
	if inCompact {
		st.midCompaction++
	}
}

// tornTail is a partial line appended to a session file.
type tornTail struct {
	path string
	tail []byte
}

// injectTorn appends a partial entry line to the context or log file of a random
// session.
func injectTorn(t *testing.T, rng *mrand.Rand, root string, round int) tornTail {
	t.Helper()
	sid := crashSessionID(rng.IntN(crashSessions))
	files := sessiontree.FilesOf(root, transcript.TranscriptRef{AgentID: crashAgent, SessionID: sid})
	path := files.Context
	if rng.IntN(2) == 0 {
		path = files.Log
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		// Already torn by an earlier injection that no flush repaired yet: that one
		// is checked; add nothing.
		return tornTail{path: path, tail: data[bytes.LastIndexByte(data, '\n')+1:]}
	}
	tail := fmt.Appendf(nil, `{"type":"message","id":"torn%d","parentId":null,"message":{"role":"us`, round)
	tail = tail[:1+rng.IntN(len(tail)-1)]
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(tail)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return tornTail{path: path, tail: tail}
}

// requireTreeClosed checks that every entry of tr has its parent in tr.
func requireTreeClosed(t *testing.T, tr *sessiontree.Tree) {
	t.Helper()
	for _, e := range tr.Entries() {
		if p, ok := e.ParentID(); ok {
			_, err := tr.Entry(p)
			require.NoError(t, err, "entry %s without its parent %s", e.ID(), p)
		}
	}
}

// jobLoop runs the compaction job binary again and again until killed.
type jobLoop struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	stopped bool
	err     error
	done    chan struct{}
}

// startJobLoop runs `transcript-compact` on the store in a loop, deleting superseded
// segments at once, as often as it can.
func startJobLoop(bin, storeURL string) *jobLoop {
	j := &jobLoop{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		for {
			cmd := exec.Command(bin, "--store", storeURL, "--min-segments", "3", "--delete-delay", "0", "--json")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			j.mu.Lock()
			if j.stopped {
				j.mu.Unlock()
				return
			}
			if err := cmd.Start(); err != nil {
				j.err = err
				j.mu.Unlock()
				return
			}
			j.cmd = cmd
			j.mu.Unlock()
			err := cmd.Wait()
			j.mu.Lock()
			j.cmd = nil
			killed := j.stopped
			if err != nil && !killed && j.err == nil {
				j.err = fmt.Errorf("transcript-compact: %w:\n%s", err, out.String())
			}
			j.mu.Unlock()
			if killed {
				return
			}
		}
	}()
	return j
}

// kill stops the loop, SIGKILLing a running job; it reports whether one was
// running and the first failure of a run that was not killed.
func (j *jobLoop) kill() (bool, error) {
	j.mu.Lock()
	j.stopped = true
	running := j.cmd != nil
	if running {
		_ = j.cmd.Process.Signal(syscall.SIGKILL)
	}
	j.mu.Unlock()
	<-j.done
	return running, j.err
}
