package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/churntest"
	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// binary is the transcript-compact binary built once for the tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "transcript-compact-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "transcript-compact")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func runBinary(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errOut.String()}
}

func (r result) summary(t *testing.T) summary {
	t.Helper()
	var s summary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return s
}

var bucketSeq atomic.Int64

// stores returns store URLs for a local directory and MinIO (skipped without it,
// failed under CI=true).
func stores() map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"file": func(t *testing.T) string { return "file://" + t.TempDir() },
		"minio": func(t *testing.T) string {
			endpoint, _, _ := s3test.S3Endpoint(t)
			return fmt.Sprintf("s3://compact-test-%d-%d/jobs?endpoint=%s&insecure=true&create=true",
				os.Getpid(), bucketSeq.Add(1), endpoint)
		},
	}
}

func openStore(t testing.TB, url string) *transcript.Store {
	t.Helper()
	b, prefix, err := bucketurl.Open(context.Background(), url)
	require.NoError(t, err)
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(id, parent string) []byte {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-11-29T10:00:00.000Z","message":{"role":"user","content":"turn %s"}}`, id, p, id))
}

// populate writes sessions[i] one-entry segments to session s{i} of agent "coder" in
// namespace "acme", and returns the refs and every entry id per ref.
func populate(t *testing.T, s *transcript.Store, segments ...int) ([]transcript.TranscriptRef, map[transcript.TranscriptRef][]string) {
	t.Helper()
	ctx := context.Background()
	w, err := transcript.NewWriter("replica-1")
	require.NoError(t, err)
	var refs []transcript.TranscriptRef
	want := map[transcript.TranscriptRef][]string{}
	for i, n := range segments {
		ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: fmt.Sprintf("s%03d", i)}
		refs = append(refs, ref)
		parent := ""
		for k := range n {
			id := fmt.Sprintf("%s-e%d", ref.SessionID, k)
			_, err := s.AppendSegment(ctx, ref, [][]byte{entry(id, parent)}, w)
			require.NoError(t, err)
			want[ref] = append(want[ref], id)
			parent = id
		}
	}
	return refs, want
}

// checkEntries fails unless every session holds exactly the wanted entries, once.
func checkEntries(t *testing.T, s *transcript.Store, want map[transcript.TranscriptRef][]string) {
	t.Helper()
	for ref, ids := range want {
		res, err := s.ReadAll(context.Background(), ref)
		require.NoError(t, err, ref.String())
		got := make([]string, len(res.Entries))
		for i, e := range res.Entries {
			got[i] = e.ID
		}
		require.Equal(t, ids, got, ref.String())
		require.Empty(t, res.Conflicts)
	}
}

// snapshot lists every key of the store's bucket with its size.
func snapshot(t *testing.T, b bucket.Bucket) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{}, func(oi bucket.ObjectInfo) error {
		out[oi.Key] = oi.Size
		return nil
	}))
	return out
}

func TestJob_CompactsEverySession(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			url := newURL(t)
			s := openStore(t, url)
			refs, want := populate(t, s, 10, 10, 4, 3, 12)
			r := runBinary(t, context.Background(), "--store", url, "--delete-delay", "0", "--json")
			require.Equal(t, 0, r.code, r.stderr)
			sum := r.summary(t)
			require.Equal(t, 5, sum.SessionsScanned)
			require.Equal(t, 4, sum.SessionsCompacted, "the 3-segment session is below --min-segments")
			require.Equal(t, 36, sum.SegmentsIn)
			require.Equal(t, 4, sum.SegmentsOut)
			require.Equal(t, 36, sum.Marks)
			require.Equal(t, 36, sum.Deletions)
			require.Positive(t, sum.BytesIn)
			require.Positive(t, sum.BytesOut)
			require.Empty(t, sum.Errors)
			checkEntries(t, s, want)
			for _, ref := range refs {
				res, err := s.ReadAll(context.Background(), ref)
				require.NoError(t, err)
				if ref.SessionID == "s003" {
					require.Len(t, res.Segments, 3)
				} else {
					require.Len(t, res.Segments, 1, "a compacted session opens with one segment")
				}
			}
			// A second run finds nothing to do.
			r = runBinary(t, context.Background(), "--store", url, "--delete-delay", "0", "--json")
			require.Equal(t, 0, r.code, r.stderr)
			sum = r.summary(t)
			require.Zero(t, sum.SessionsCompacted+sum.Marks+sum.Deletions)
		})
	}
}

func TestJob_DryRunChangesNothing(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	populate(t, s, 6, 2)
	before := snapshot(t, s.Bucket())
	r := runBinary(t, context.Background(), "--store", url, "--dry-run", "--delete-delay", "0")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "plan acme/coder/s000: 6 L0 segments")
	require.NotContains(t, r.stdout, "s001:")
	require.Contains(t, r.stdout, "would compact 1")
	require.Contains(t, r.stdout, "; would mark 6, would delete 6, 0 waiting, would delete 0 uncommitted;",
		"a dry run marks and deletes nothing, and its summary says so")
	require.Equal(t, before, snapshot(t, s.Bucket()))
}

// TestJob_DryRunJSON: with --json, stdout holds the summary alone, one JSON
// object, whatever the dry run plans (compactions, deletions, retention); the
// plan lines go to stderr. The compaction plan used to go to stdout before the
// summary, so a script could not parse it.
func TestJob_DryRunJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		plan string // a line the plan holds
	}{
		{"compaction", nil, "plan acme/coder/s000: 6 L0 segments"},
		{"full", []string{"--full"}, "plan acme/coder/s000: 6 L0 segments"},
		{"retention", []string{"--keep-last", "1"}, "retention plan acme/coder/s000: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := "file://" + t.TempDir()
			s := openStore(t, url)
			populate(t, s, 6, 2)
			r := runBinary(t, context.Background(), append([]string{"--store", url, "--dry-run", "--delete-delay", "0", "--json"}, tc.args...)...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, 1, strings.Count(r.stdout, "\n"), "stdout: %s", r.stdout)
			require.True(t, r.summary(t).DryRun)
			require.Contains(t, r.stderr, tc.plan)
		})
	}
}

func TestJob_Selection(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	populate(t, s, 5, 5, 5)
	other := transcript.TranscriptRef{Namespace: "globex", AgentID: "coder", SessionID: "s000"}
	w, err := transcript.NewWriter("w")
	require.NoError(t, err)
	for i := range 5 {
		_, err := s.AppendSegment(context.Background(), other, [][]byte{entry(fmt.Sprintf("g%d", i), "")}, w)
		require.NoError(t, err)
	}
	cases := []struct {
		name      string
		args      []string
		compacted int
		skipped   int
	}{
		{"recent sessions skipped", []string{"--older-than", "1h"}, 0, 4},
		{"one session", []string{"--ns", "acme", "--agent", "coder", "--session", "s001"}, 1, 0},
		{"one namespace", []string{"--ns", "globex"}, 1, 0},
		{"the rest", nil, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, context.Background(), append([]string{"--store", url, "--json"}, tc.args...)...)
			require.Equal(t, 0, r.code, r.stderr)
			sum := r.summary(t)
			require.Equal(t, tc.compacted, sum.SessionsCompacted)
			require.Equal(t, tc.skipped, sum.SessionsSkipped)
		})
	}
}

func TestJob_Usage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"shard out of range", []string{"--shard", "4/4"}, "--shard"},
		{"shard malformed", []string{"--shard", "x"}, "--shard"},
		{"min segments", []string{"--min-segments", "1"}, "--min-segments"},
		{"target segment size", []string{"--target-segment-size", "0"}, "--target-segment-size"},
		{"target segment size in MiB", []string{"--target-segment-size", "64"}, "want 1024 to"},
		{"parallel", []string{"--parallel", "0"}, "--parallel"},
		{"negative delay", []string{"--delete-delay", "-1s"}, "--delete-delay"},
		{"session without agent", []string{"--session", "s1"}, "--session needs --agent"},
		{"path traversal", []string{"--ns", "../x"}, "--ns"},
		{"unknown flag", []string{"--bogus"}, "bogus"},
		{"arguments", []string{"extra"}, "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runBinary(t, context.Background(), append([]string{"--store", "file://" + t.TempDir()}, tc.args...)...)
			require.Equal(t, 2, r.code)
			require.Contains(t, r.stderr, tc.want)
			require.Empty(t, r.stdout)
		})
	}
	r := runBinary(t, context.Background(), "-h")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stdout, "--shard", "help goes to stdout")
	// 'help', as transcript and transcript-serve take it, is the help too.
	h := runBinary(t, context.Background(), "help")
	require.Equal(t, 0, h.code, h.stderr)
	require.Equal(t, r.stdout, h.stdout)
}

func TestJob_CorruptSessionSkipped(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir
	s := openStore(t, url)
	refs, want := populate(t, s, 5, 5)
	infos, err := s.ListSegments(context.Background(), refs[0])
	require.NoError(t, err)
	victim := infos[1].Key
	path := filepath.Join(dir, filepath.FromSlash(victim))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[len(data)-2] ^= 0x55
	require.NoError(t, os.Chmod(path, 0o644))
	require.NoError(t, os.WriteFile(path, data, 0o644))
	damaged := snapshot(t, s.Bucket())

	r := runBinary(t, context.Background(), "--store", url, "--delete-delay", "0", "--json")
	require.Equal(t, 1, r.code, "a failed session makes the job fail")
	require.Contains(t, r.stderr, victim, "the corrupt segment is named")
	sum := r.summary(t)
	require.Equal(t, 1, sum.SessionsFailed)
	require.Equal(t, 1, sum.SessionsCompacted, "the other session is still compacted")
	after := snapshot(t, s.Bucket())
	for k, size := range damaged {
		if strings.Contains(k, "/s000/") {
			require.Equal(t, size, after[k], "the damaged session is left as it was: %s", k)
		}
	}
	delete(want, refs[0])
	checkEntries(t, s, want)
}

func TestJob_ShardsSplitTheBucket(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			url := newURL(t)
			s := openStore(t, url)
			sizes := make([]int, 24)
			for i := range sizes {
				sizes[i] = 4
			}
			refs, want := populate(t, s, sizes...)
			const n = 4
			results := make([]result, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = runBinary(t, context.Background(), "--store", url, "--shard", fmt.Sprintf("%d/%d", i, n),
						"--delete-delay", "0", "--json")
				}()
			}
			wg.Wait()
			total := 0
			for i, r := range results {
				require.Equal(t, 0, r.code, "shard %d: %s", i, r.stderr)
				sum := r.summary(t)
				require.Empty(t, sum.Errors)
				total += sum.SessionsCompacted
				require.Equal(t, sum.SessionsListed, sum.SessionsCompacted)
			}
			require.Equal(t, len(refs), total, "every session compacted by exactly one shard")
			for _, ref := range refs {
				infos, err := s.ListSegments(context.Background(), ref)
				require.NoError(t, err)
				require.Len(t, infos, 1, "%s: one compacted segment, written once", ref)
				require.Equal(t, 1, infos[0].Level)
			}
			checkEntries(t, s, want)
		})
	}
}

// TestJob_KilledAtRandomPoints kills the job with SIGKILL at random moments, in a
// bounded loop, checking after every kill that nothing is lost; a final run finishes
// the work.
func TestJob_KilledAtRandomPoints(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			url := newURL(t)
			s := openStore(t, url)
			sizes := make([]int, 30)
			for i := range sizes {
				sizes[i] = 6 + i%5
			}
			refs, want := populate(t, s, sizes...)
			seed := time.Now().UnixNano()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(uint64(seed), 1))
			// A fixed number of rounds, not a time budget: on a loaded machine a
			// budget ran too few rounds and failed a test that found nothing wrong.
			const rounds = 10
			// Kill within twice the time a dry run takes (it lists and reads what a
			// real run would), so that kills land while the job works on a quiet
			// machine and on a loaded one alike.
			start := time.Now()
			dry := runBinary(t, context.Background(), "--store", url, "--min-segments", "2", "--dry-run")
			require.Equal(t, 0, dry.code, dry.stderr)
			killWithin := max(2*time.Since(start), 400*time.Millisecond)
			midWork := 0
			for round := range rounds {
				before := snapshot(t, s.Bucket())
				cmd := exec.Command(binary, "--store", url, "--delete-delay", "0", "--min-segments", "2", "--parallel", "4")
				require.NoError(t, cmd.Start())
				time.Sleep(time.Duration(rng.Int64N(int64(killWithin))))
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				if len(snapshot(t, s.Bucket())) != len(before) {
					midWork++
				}
				checkEntries(t, s, want)
				// Add a segment to some session, so later rounds find new work.
				ref := refs[rng.IntN(len(refs))]
				ids := want[ref]
				id := fmt.Sprintf("%s-k%d", ref.SessionID, round)
				w, err := transcript.NewWriter(fmt.Sprintf("late-%d", round))
				require.NoError(t, err)
				_, err = s.AppendSegment(context.Background(), ref, [][]byte{entry(id, ids[len(ids)-1])}, w)
				require.NoError(t, err)
				want[ref] = append(ids, id)
			}
			t.Logf("%d rounds, %d killed after the job had changed the bucket", rounds, midWork)
			r := runBinary(t, context.Background(), "--store", url, "--delete-delay", "0", "--min-segments", "2", "--json")
			require.Equal(t, 0, r.code, r.stderr)
			checkEntries(t, s, want)
			// The inputs of outputs a killed run stored wait for those outputs to
			// be a minute old; a run that late deletes them.
			finishLater(t, s, refs, 2)
			checkEntries(t, s, want)
			requireSettled(t, s, refs, 2)
		})
	}
}

// laterClock is a bucket whose clock runs two minutes ahead of the store's.
type laterClock struct{ bucket.Bucket }

func (b laterClock) Now(ctx context.Context) (time.Time, error) {
	now, err := b.Bucket.Now(ctx)
	return now.Add(2 * time.Minute), err
}

// finishLater compacts refs as a run two minutes from now would, with no
// delete delay: the inputs that a run left waiting for another run's output to
// settle are then deleted.
func finishLater(t *testing.T, s *transcript.Store, refs []transcript.TranscriptRef, minSegments int) {
	t.Helper()
	later, err := transcript.New(transcript.Config{Bucket: laterClock{s.Bucket()}, Prefix: s.Prefix()})
	require.NoError(t, err)
	defer later.Close()
	for _, ref := range refs {
		_, err := later.Compact(context.Background(), ref,
			transcript.CompactOptions{MinSegments: minSegments, DeleteDelay: transcript.DeleteAtOnce})
		require.NoError(t, err)
	}
}

// TestJob_SettlesOneSegmentPerLevel replays, without kills, the appends that one
// session received in a run of TestJob_KilledAtRandomPoints: ten segments, then five
// late ones between job runs. With --min-segments 2 a settled session keeps one
// segment on each of three levels (L2 from two L1s, a later L1, the newest L0): the
// number of segments a session opens with grows with its levels, not a constant.
// --full then merges them all into one.
func TestJob_SettlesOneSegmentPerLevel(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			url := newURL(t)
			s := openStore(t, url)
			refs, want := populate(t, s, 10)
			ref := refs[0]
			job := func() {
				r := runBinary(t, context.Background(), "--store", url, "--delete-delay", "0", "--min-segments", "2", "--json")
				require.Equal(t, 0, r.code, r.stderr)
			}
			appendLate := func(n int) {
				w, err := transcript.NewWriter(fmt.Sprintf("late-%d", n))
				require.NoError(t, err)
				id := fmt.Sprintf("%s-k%d", ref.SessionID, n)
				_, err = s.AppendSegment(context.Background(), ref, [][]byte{entry(id, want[ref][len(want[ref])-1])}, w)
				require.NoError(t, err)
				want[ref] = append(want[ref], id)
			}
			job() // 10 x L0 -> L1
			for n := range 5 {
				appendLate(n)
				job() // L0+L0 -> L1 after the 2nd and 4th; L1+L1 -> L2 after the 2nd
			}
			checkEntries(t, s, want)
			requireSettled(t, s, refs, 2)
			res, err := s.ReadAll(context.Background(), ref)
			require.NoError(t, err)
			var levels []int
			for _, in := range res.Segments {
				levels = append(levels, in.Level)
			}
			require.ElementsMatch(t, []int{0, 1, 2}, levels)

			// --full then merges the three levels into one segment (a dry run
			// first, which changes nothing).
			before := snapshot(t, s.Bucket())
			r := runBinary(t, context.Background(), "--store", url, "--full", "--dry-run")
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "plan acme/coder/s000: 3 L0-L2 segments")
			require.Equal(t, before, snapshot(t, s.Bucket()))
			r = runBinary(t, context.Background(), "--store", url, "--full", "--delete-delay", "0", "--json")
			require.Equal(t, 0, r.code, r.stderr)
			sum := r.summary(t)
			require.Equal(t, 3, sum.SegmentsIn)
			require.Equal(t, 1, sum.SegmentsOut)
			checkEntries(t, s, want)
			res, err = s.ReadAll(context.Background(), ref)
			require.NoError(t, err)
			require.Len(t, res.Segments, 1)
			require.Equal(t, 3, res.Segments[0].Level, "one level above the highest merged")
			require.Len(t, snapshot(t, s.Bucket()), 1, "the inputs are deleted")
		})
	}
}

// requireSettled fails unless the job has left nothing to do: in every session each
// level holds fewer than minSegments segments, and the bucket holds nothing but
// those segments (no superseded input, no deletion mark).
func requireSettled(t *testing.T, s *transcript.Store, refs []transcript.TranscriptRef, minSegments int) {
	t.Helper()
	live := map[string]int64{}
	for _, ref := range refs {
		res, err := s.ReadAll(context.Background(), ref)
		require.NoError(t, err)
		perLevel := map[int]int{}
		for _, in := range res.Segments {
			perLevel[in.Level]++
			live[in.Key] = in.Size
		}
		for level, n := range perLevel {
			require.Less(t, n, minSegments, "%s: L%d holds %d segments after a final run", ref, level, n)
		}
	}
	require.Equal(t, live, snapshot(t, s.Bucket()), "only live segments remain")
}

// TestJob_WhileReplicasWriteAndRead runs the job binary repeatedly while writers
// append to the same sessions and readers open them: no reader error, no reader
// missing an acknowledged entry, every result closed under parents, and at the end
// every entry present exactly once.
func TestJob_WhileReplicasWriteAndRead(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			url := newURL(t)
			s := openStore(t, url)
			refs, initial := populate(t, s, 1, 1, 1)
			res, err := churntest.Run(ctx, churntest.Config{
				Store: s, Refs: refs, Writers: 4, PerWriter: 25, WriterPause: 5 * time.Millisecond, Entry: entry,
				Job: func(ctx context.Context) error {
					r := runBinary(t, ctx, "--store", url, "--min-segments", "3", "--delete-delay", "1s", "--json")
					if r.code != 0 {
						return fmt.Errorf("exit %d: %s", r.code, r.stderr)
					}
					return nil
				},
			})
			require.NoError(t, err)
			require.Positive(t, res.Reads)
			require.Positive(t, res.Jobs)
			for _, ref := range refs {
				got, err := s.ReadAll(ctx, ref)
				require.NoError(t, err)
				want := append(initial[ref], res.Acked[ref]...)
				require.Len(t, got.Entries, len(want), "%s: every entry exactly once", ref)
				require.Empty(t, got.Missing(want))
				require.Empty(t, got.Conflicts)
			}
		})
	}
}

// TestJob_SessionAboveTarget: a session larger than --target-segment-size compacts
// into a group of parts of one level, reads back the same, and a second run leaves
// it alone.
func TestJob_SessionAboveTarget(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			url := newURL(t)
			s := openStore(t, url)
			refs, want := populate(t, s, 30)
			args := []string{"--store", url, "--delete-delay", "0", "--target-segment-size", "1024", "--json"}
			r := runBinary(t, context.Background(), args...)
			require.Equal(t, 0, r.code, r.stderr)
			sum := r.summary(t)
			require.Equal(t, 30, sum.SegmentsIn)
			require.Greater(t, sum.SegmentsOut, 1, "the output is split into parts")
			require.Equal(t, 30, sum.Deletions)
			checkEntries(t, s, want)
			infos, err := s.ListSegments(context.Background(), refs[0])
			require.NoError(t, err)
			require.Len(t, infos, sum.SegmentsOut)
			for _, in := range infos {
				require.Equal(t, 1, in.Level, "all parts are of one level")
			}

			r = runBinary(t, context.Background(), args...)
			require.Equal(t, 0, r.code, r.stderr)
			sum = r.summary(t)
			require.Zero(t, sum.SessionsCompacted+sum.Marks+sum.Deletions, "the group counts as one segment")
		})
	}
}
