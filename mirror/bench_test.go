package mirror_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// benchTurn returns the entries of one realistic agent turn: a user message, an
// assistant message with thinking, text and a tool call, and the tool result.
func benchTurn(rng *rand.Rand, turn int, parent string) ([][]byte, string) {
	ts := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC).Add(time.Duration(turn) * 20 * time.Second)
	words := func(n int) string {
		const vocab = "the agent reads file writes patch runs tests fails passes because config value missing returns error handler request"
		v := strings.Fields(vocab)
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(v[rng.IntN(len(v))])
		}
		return sb.String()
	}
	id := func(k int) string { return fmt.Sprintf("%08x", uint32(turn*4+k)) }
	at := func(k int) string { return ts.Add(time.Duration(k) * time.Second).Format(time.RFC3339Nano) }
	ms := func(k int) int64 { return ts.Add(time.Duration(k) * time.Second).UnixMilli() }
	user := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":%q,"message":{"role":"user","content":[{"type":"text","text":%q}],"timestamp":%d}}`,
		id(0), parent, at(0), words(10+rng.IntN(40)), ms(0))
	if parent == "" {
		user = strings.Replace(user, `"parentId":""`, `"parentId":null`, 1)
	}
	assistant := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":%q,"message":{"role":"assistant","content":[{"type":"thinking","thinking":%q},{"type":"text","text":%q},{"type":"toolCall","id":"call_%d","name":"bash","arguments":{"command":"go test ./... -run %s"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d},"stopReason":"toolUse","timestamp":%d}}`,
		id(1), id(0), at(1), words(30+rng.IntN(60)), words(20+rng.IntN(40)), turn, words(1), 2000+turn*300, 150+rng.IntN(300), 1800+turn*300, 4000+turn*600, ms(1))
	result := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":%q,"message":{"role":"toolResult","toolCallId":"call_%d","toolName":"bash","content":[{"type":"text","text":%q}],"isError":false,"timestamp":%d}}`,
		id(2), id(1), at(2), turn, words(40+rng.IntN(120)), ms(2))
	return [][]byte{[]byte(user), []byte(assistant), []byte(result)}, id(2)
}

// benchSession is a recorded session: the batch of every flush (one per turn).
type benchSession [][][]byte

func newBenchSession(turns int) benchSession {
	rng := rand.New(rand.NewPCG(1, 2))
	s := make(benchSession, turns)
	parent := ""
	for i := range s {
		s[i], parent = benchTurn(rng, i, parent)
	}
	return s
}

// benchResult is what one run of a session through a mirror cost.
type benchResult struct {
	bytes, requests int64
	wall            time.Duration
	// flushWait is the total time the flushing caller spent in Upload.
	flushWait time.Duration
}

// runSegments flushes the session through the segment Mirror, one Upload per turn,
// and waits until the store has everything.
func runSegments(b *testing.B, bk bucket.Bucket, sess benchSession, sid string) benchResult {
	fb := faultbucket.Wrap(bk)
	store := newStore(b, fb, "bench")
	w, err := transcript.NewWriter("bench")
	require.NoError(b, err)
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: b.TempDir()})
	require.NoError(b, err)
	ref := transcript.TranscriptRef{AgentID: "bench", SessionID: sid}
	ctx := context.Background()
	start := time.Now()
	var wait time.Duration
	for _, entries := range sess {
		t0 := time.Now()
		require.NoError(b, m.Upload(ctx, sessiontree.Batch{Ref: ref, Entries: entries}))
		wait += time.Since(t0)
	}
	require.NoError(b, m.AwaitQuiescence(ctx))
	wall := time.Since(start)
	require.NoError(b, m.Close(ctx))
	c := fb.Counts()
	return benchResult{bytes: c.BytesUp, requests: c.Requests(), wall: wall, flushWait: wait}
}

// runLegacy flushes the session through the legacy full-file mirror: each turn is
// appended to the local log and context files, and both are uploaded whole.
func runLegacy(b *testing.B, bk bucket.Bucket, sess benchSession, sid string) benchResult {
	fb := faultbucket.Wrap(bk)
	l := &mirror.Legacy{Bucket: fb, Prefix: "legacy"}
	ref := transcript.TranscriptRef{AgentID: "bench", SessionID: sid}
	files := sessiontree.FilesOf(b.TempDir(), ref)
	require.NoError(b, os.MkdirAll(filepath.Dir(files.Context), 0o755))
	cf, err := os.Create(files.Context)
	require.NoError(b, err)
	defer cf.Close()
	lf, err := os.Create(files.Log)
	require.NoError(b, err)
	defer lf.Close()
	ctx := context.Background()
	start := time.Now()
	var wait time.Duration
	for _, entries := range sess {
		for _, e := range entries {
			line := append(append([]byte{}, e...), '\n')
			_, err := cf.Write(line)
			require.NoError(b, err)
			_, err = lf.Write(line)
			require.NoError(b, err)
		}
		t0 := time.Now()
		require.NoError(b, l.Upload(ctx, sessiontree.Batch{Ref: ref, Entries: entries, Files: files}))
		wait += time.Since(t0)
	}
	wall := time.Since(start)
	c := fb.Counts()
	return benchResult{bytes: c.BytesUp, requests: c.Requests(), wall: wall, flushWait: wait}
}

// BenchmarkMirror_SegmentsVsLegacy runs the same session (one flush per turn of
// realistic entries) through the segment mirror and the legacy full-file mirror, in
// memory and, when TRANSCRIPT_TEST_S3_ENDPOINT is set, against MinIO, and reports for
// each the bytes uploaded, the requests and the wall time per session (for the
// segment mirror: until AwaitQuiescence returns), their ratios (legacy / segments),
// and the mean time a flush waits in Upload. MIRROR_BENCH_TURNS overrides the session lengths
// (comma-separated; default 250,1000). Run with -benchtime=1x:
//
//	go test ./mirror -run '^$' -bench SegmentsVsLegacy -benchtime=1x
func BenchmarkMirror_SegmentsVsLegacy(b *testing.B) {
	turnsList := []int{250, 1000}
	if s := os.Getenv("MIRROR_BENCH_TURNS"); s != "" {
		turnsList = nil
		for _, f := range strings.Split(s, ",") {
			var n int
			_, err := fmt.Sscan(f, &n)
			require.NoError(b, err)
			turnsList = append(turnsList, n)
		}
	}
	backends := []struct {
		name string
		open func(b *testing.B) bucket.Bucket
	}{
		{"mem", func(*testing.B) bucket.Bucket { return membucket.New() }},
		{"minio", func(b *testing.B) bucket.Bucket {
			if os.Getenv(s3test.EnvS3Endpoint) == "" {
				b.Skip(s3test.EnvS3Endpoint + " is not set")
			}
			return newS3Client(b, newS3TestBucket(b), s3Options{})
		}},
	}
	for _, be := range backends {
		for _, turns := range turnsList {
			b.Run(fmt.Sprintf("backend=%s/turns=%d", be.name, turns), func(b *testing.B) {
				bk := be.open(b)
				sess := newBenchSession(turns)
				var seg, leg benchResult
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					sid := fmt.Sprintf("s%d-%d", turns, i)
					s := runSegments(b, bk, sess, sid)
					l := runLegacy(b, bk, sess, sid)
					seg.bytes, seg.requests, seg.wall, seg.flushWait = seg.bytes+s.bytes, seg.requests+s.requests, seg.wall+s.wall, seg.flushWait+s.flushWait
					leg.bytes, leg.requests, leg.wall, leg.flushWait = leg.bytes+l.bytes, leg.requests+l.requests, leg.wall+l.wall, leg.flushWait+l.flushWait
				}
				n := float64(b.N)
				b.ReportMetric(float64(seg.bytes)/n, "seg_bytes/session")
				b.ReportMetric(float64(leg.bytes)/n, "legacy_bytes/session")
				b.ReportMetric(float64(leg.bytes)/float64(seg.bytes), "bytes_ratio")
				b.ReportMetric(float64(seg.requests)/n, "seg_requests/session")
				b.ReportMetric(float64(leg.requests)/n, "legacy_requests/session")
				b.ReportMetric(float64(leg.requests)/float64(seg.requests), "requests_ratio")
				b.ReportMetric(seg.wall.Seconds()/n, "seg_wall_s/session")
				b.ReportMetric(leg.wall.Seconds()/n, "legacy_wall_s/session")
				b.ReportMetric(leg.wall.Seconds()/seg.wall.Seconds(), "wall_ratio")
				flushes := n * float64(turns)
				b.ReportMetric(float64(seg.flushWait.Microseconds())/flushes, "seg_flush_us/flush")
				b.ReportMetric(float64(leg.flushWait.Microseconds())/flushes, "legacy_flush_us/flush")
			})
		}
	}
}
