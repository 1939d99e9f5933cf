package mirror_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// Environment of the crash-test child process.
const (
	crashChildEnv  = "MIRROR_CRASH_CHILD"  // "1" in the child
	crashBucketEnv = "MIRROR_CRASH_BUCKET" // where the store is: a directory, or "s3:" + bucket spec
	crashOutboxEnv = "MIRROR_CRASH_OUTBOX" // the shared outbox
	crashAckEnv    = "MIRROR_CRASH_ACK"    // file the child appends acknowledged entry ids to
	crashRoundEnv  = "MIRROR_CRASH_ROUND"  // round number, to make ids unique
	crashSessions  = 6
	// crashFlushers is the number of goroutines of the child that flush at once,
	// each over its own sessions (i % crashFlushers), so that kills land while
	// Uploads share journal fsyncs.
	crashFlushers = 3
)

// crashBucket opens the bucket a crash test uses, in parent and child alike.
type crashBucket func(t testing.TB, spec string) bucket.Bucket

func openFileBucket(t testing.TB, dir string) bucket.Bucket {
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	return b
}

// TestCrashChild is the child process of the crash tests; it does nothing unless
// started by one. Its flushers flush batches in loops, concurrently, and append the
// ids of every batch that Upload accepted to the ack file, until it is killed.
func TestCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) != "1" {
		t.Skip("run by the crash tests only")
	}
	spec := os.Getenv(crashBucketEnv)
	var b bucket.Bucket
	if s3spec, ok := strings.CutPrefix(spec, "s3:"); ok {
		b = openS3Bucket(t, s3spec)
	} else {
		b = openFileBucket(t, spec)
	}
	// A random delay per PUT keeps uploads in flight when the kill comes, and
	// would let a session's later segment overtake an earlier one if the Mirror
	// uploaded them concurrently.
	store, err := transcript.New(transcript.Config{Bucket: jitterBucket{b}, Prefix: "crash"})
	require.NoError(t, err)
	round := os.Getenv(crashRoundEnv)
	w, err := transcript.NewWriter("crash-" + round)
	require.NoError(t, err)
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: os.Getenv(crashOutboxEnv),
		Workers: 2 * crashSessions, MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	require.NoError(t, err)
	ack, err := os.OpenFile(os.Getenv(crashAckEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	ctx := context.Background()
	last := make([]string, crashSessions) // flusher f owns the sessions with sid % crashFlushers == f
	var ackMu sync.Mutex
	deadline := time.Now().Add(30 * time.Second) // bounded, should the parent never kill
	var g errgroup.Group
	for f := range crashFlushers {
		g.Go(func() error {
			for n := 0; time.Now().Before(deadline); n++ {
				i := n*crashFlushers + f
				sid := i % crashSessions
				b := sessiontree.Batch{Ref: transcript.TranscriptRef{AgentID: "crash", SessionID: fmt.Sprintf("s%d", sid)}}
				var ids []string
				for k := range 1 + i%3 {
					id := fmt.Sprintf("r%s-%d-%d", round, i, k)
					b.Entries = append(b.Entries, entry(id, last[sid], i, strings.Repeat("x", 100+i%200)))
					last[sid] = id
					ids = append(ids, id)
				}
				if err := m.Upload(ctx, b); err != nil {
					return err
				}
				// Acknowledged only after Upload returned: these ids must never be lost.
				ackMu.Lock()
				_, err := ack.WriteString(strings.Join(ids, "\n") + "\n")
				ackMu.Unlock()
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
}

// jitterBucket delays every Put by a random time below 20 ms.
type jitterBucket struct{ bucket.Bucket }

func (b jitterBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	return b.Bucket.Put(ctx, key, r, size, opts)
}

// runCrashTest starts the child rounds times and kills it with SIGKILL at random
// moments. After each kill the store must hold every session parent before child
// (an entry's parent is stored whenever the entry is); at the end a Mirror on the
// same outbox uploads what is left, and every acknowledged entry must be in the
// store exactly once.
func runCrashTest(t *testing.T, spec string, open crashBucket) {
	if testing.Short() {
		t.Skip("crash test starts child processes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MIRROR_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (set MIRROR_CRASH_SEED to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	outbox, ackPath := filepath.Join(dir, "outbox"), filepath.Join(dir, "acks")
	const rounds = 5
	leftovers := 0
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), crashChildEnv+"=1", crashBucketEnv+"="+spec, crashOutboxEnv+"="+outbox,
			crashAckEnv+"="+ackPath, crashRoundEnv+"="+strconv.Itoa(round))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		before := fileSize(ackPath)
		require.NoError(t, cmd.Start())
		// Kill at a random moment after the child's first acknowledged flush.
		for start := time.Now(); fileSize(ackPath) == before && time.Since(start) < 30*time.Second; {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		err := cmd.Wait()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL,
			"round %d: the child must die by SIGKILL, not exit (%v):\n%s", round, err, out)
		n := len(journalKeys(t, outbox))
		leftovers += n
		t.Logf("round %d: killed with %d records in the outbox journal", round, n)
		requireParentsStored(t, newStore(t, open(t, spec), "crash"))
	}
	acked := readAcks(t, ackPath)
	require.NotEmpty(t, acked, "the child acknowledged nothing")

	store := newStore(t, open(t, spec), "crash")
	m := newMirror(t, store, outbox, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	require.NoError(t, m.AwaitQuiescence(ctx))
	require.NoError(t, m.Close(ctx))
	require.Empty(t, outboxFiles(t, outbox, "pending"))
	require.Empty(t, outboxFiles(t, outbox, "failed"))
	require.Empty(t, outboxFiles(t, outbox, "journal"))

	stored := 0
	requireParentsStored(t, store)
	for sid := range crashSessions {
		ref := transcript.TranscriptRef{AgentID: "crash", SessionID: fmt.Sprintf("s%d", sid)}
		ids := requireOnce(t, store, ref)
		stored += len(ids)
		for id := range acked[ref.SessionID] {
			require.Contains(t, ids, id, "acknowledged entry lost")
		}
	}
	t.Logf("%d rounds, %d entries acknowledged, %d stored, %d journal records left by kills",
		rounds, countAcks(acked), stored, leftovers)
}

// readAcks reads the ack file: session id -> acknowledged entry ids. A torn last line
// is ignored (its batch was acknowledged only partly, so not at all).
func readAcks(t *testing.T, path string) map[string]map[string]bool {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	complete := strings.HasSuffix(string(data), "\n")
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if !complete && len(lines) > 0 {
		lines = lines[:len(lines)-1]
	}
	for _, id := range lines {
		// id is r{round}-{i}-{k}; the session is i % crashSessions.
		parts := strings.Split(id, "-")
		require.Len(t, parts, 3, "ack line %q", id)
		i, err := strconv.Atoi(parts[1])
		require.NoError(t, err)
		sid := fmt.Sprintf("s%d", i%crashSessions)
		if out[sid] == nil {
			out[sid] = map[string]bool{}
		}
		out[sid][id] = true
	}
	return out
}

func countAcks(a map[string]map[string]bool) int {
	n := 0
	for _, ids := range a {
		n += len(ids)
	}
	return n
}

func TestMirror_CrashRecoveryFile(t *testing.T) {
	runCrashTest(t, filepath.Join(t.TempDir(), "bucket"), openFileBucket)
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// requireParentsStored checks that in every crash-test session the store holds the
// parent of every entry it holds: segments reached it parent before child.
func requireParentsStored(t *testing.T, store *transcript.Store) {
	t.Helper()
	ctx := ctxTimeout(t, 60*time.Second)
	for sid := range crashSessions {
		ref := transcript.TranscriptRef{AgentID: "crash", SessionID: fmt.Sprintf("s%d", sid)}
		res, err := store.ReadAll(ctx, ref)
		if errors.Is(err, bucket.ErrNotFound) {
			continue // nothing of the session stored yet
		}
		require.NoError(t, err)
		ids := make(map[string]bool, len(res.Entries))
		for _, e := range res.Entries {
			ids[e.ID] = true
		}
		for _, e := range res.Entries {
			if e.ParentID != "" {
				require.True(t, ids[e.ParentID], "session %s: entry %s stored without its parent %s", ref.SessionID, e.ID, e.ParentID)
			}
		}
	}
}
