package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/rusage"
	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// BenchmarkHugeSession_MinIO takes one generated Pi session of TRANSCRIPT_HUGE_MIB
// MiB of JSONL (default 1024) through the whole life of a session on the test MinIO,
// with the real binaries: `transcript import`, `transcript-compact`, `transcript
// restore` and `transcript export`. It fails unless
//
//   - the import splits the session into segments no larger than the store's
//     segment size limit,
//   - compaction leaves every segment of the session on one level, split into
//     several bounded segments (a session this large does not fit in one),
//   - the restored SessionTree files and the export are byte for byte the file that
//     was imported.
//
// It reports each step's seconds and the peak RSS of its process. It is a benchmark
// so that `go test ./...` does not run it (it moves gigabytes); run it with
//
//	go test ./cmd/transcript -run '^$' -bench HugeSession -benchtime 1x -timeout 60m
//
// with the MinIO of `bash deploy/minio/minio.sh start` and its environment.
func BenchmarkHugeSession_MinIO(b *testing.B) {
	mib := 1024
	if v := os.Getenv("TRANSCRIPT_HUGE_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "TRANSCRIPT_HUGE_MIB")
		mib = n
	}
	dir := b.TempDir()
	input := filepath.Join(dir, "huge.jsonl")
	entries, want := writeHugeSession(b, input, int64(mib)<<20)
	st, err := os.Stat(input)
	require.NoError(b, err)
	b.Logf("generated %d entries, %d bytes of JSONL", entries, st.Size())

	// splitSize is the size above which writers split their output.
	splitSize := int64(segment.DefaultTargetSegmentSize)
	compactBin := filepath.Join(dir, "transcript-compact")
	build := exec.Command("go", "build", "-o", compactBin, "../transcript-compact")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	require.NoError(b, build.Run(), "building transcript-compact")

	for i := 0; i < b.N; i++ {
		endpoint, _, _ := s3test.S3Endpoint(b)
		store := fmt.Sprintf("s3://transcript-huge-%d-%d?endpoint=%s&insecure=true&create=true", os.Getpid(), time.Now().UnixNano(), endpoint)
		args := []string{"--store", store, "--agent", "coder", "--session", "huge"}
		step := func(name string, stdout io.Writer, bin string, argv ...string) {
			b.Helper()
			secs, rss := runMeasured(b, stdout, bin, argv...)
			b.ReportMetric(secs, name+"-s")
			b.ReportMetric(float64(rss)/(1<<20), name+"-MiB-RSS")
			b.Logf("%s: %.1f s, peak RSS %d MiB (%.2f× the JSONL)", name, secs, rss>>20, float64(rss)/float64(st.Size()))
		}

		step("import", io.Discard, binary, append([]string{"import"}, append(args, input)...)...)
		levels := segmentLevels(b, store)
		if st.Size() > splitSize {
			require.Greater(b, len(levels), 1, "a session of %d MiB is more than one segment", mib)
		}
		for _, l := range levels {
			require.LessOrEqual(b, l.Size, splitSize, "stored segment %s", l.Key)
		}

		step("compact", io.Discard, compactBin, "--store", store, "--min-segments", "2", "--delete-delay", "0")
		levels = segmentLevels(b, store)
		if st.Size() > splitSize {
			require.Greater(b, len(levels), 1, "compaction splits a session of %d MiB into several segments", mib)
		}
		for _, l := range levels {
			require.Equal(b, levels[0].Level, l.Level, "after compaction every segment is on one level: %s", l.Key)
		}
		require.Positive(b, levels[0].Level)

		out := filepath.Join(dir, "restored")
		step("restore", io.Discard, binary, "restore", "--store", store, "--out", out)
		files := sessiontree.FilesOf(out, transcript.TranscriptRef{AgentID: "coder", SessionID: "huge"})
		require.Equal(b, want, fileSHA256(b, files.Context), "restored context file")
		require.Equal(b, want, fileSHA256(b, files.Log), "restored log")
		require.NoError(b, os.RemoveAll(out))

		h := sha256.New()
		step("export", h, binary, append([]string{"export"}, args...)...)
		require.Equal(b, want, hex.EncodeToString(h.Sum(nil)), "export is the imported file")
	}
}

// runMeasured runs bin with argv, its stdout into stdout, requires exit status 0
// and returns the wall seconds and the peak RSS in bytes of the process.
func runMeasured(b *testing.B, stdout io.Writer, bin string, argv ...string) (float64, int64) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	require.NoError(b, err, "%s %v: %s", filepath.Base(bin), argv, stderr.String())
	peak, err := rusage.ChildPeakRSS(cmd.ProcessState)
	require.NoError(b, err)
	return secs, peak
}

// segmentLevels lists the segments of coder/huge in the store at url.
func segmentLevels(b *testing.B, url string) []transcript.SegmentInfo {
	b.Helper()
	ctx := context.Background()
	bk, prefix, err := bucketurl.Open(ctx, url)
	require.NoError(b, err)
	if c, ok := bk.(io.Closer); ok {
		defer c.Close()
	}
	st, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(b, err)
	infos, err := st.ListSegments(ctx, transcript.TranscriptRef{AgentID: "coder", SessionID: "huge"})
	require.NoError(b, err)
	return infos
}

// writeHugeSession writes a linear Pi session of about size bytes to path: a header,
// then turns of a user message, an assistant message with a tool call, and a tool
// result of 1–16 KiB of generated output. It returns the number of entries and the
// hex SHA-256 of the file.
func writeHugeSession(b *testing.B, path string, size int64) (int, string) {
	b.Helper()
	f, err := os.Create(path)
	require.NoError(b, err)
	defer f.Close()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the a session entry segment store bucket read write run check update fix " +
		"error value return config parser input output handler request response func ctx err buf")
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(12) == 0 {
				sb.WriteString(`\n`)
			} else {
				sb.WriteByte(' ')
			}
		}
		return sb.String()
	}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var written int64
	line := func(s string) {
		n, err := w.WriteString(s + "\n")
		require.NoError(b, err)
		written += int64(n)
	}
	line(`{"type":"session","version":3,"id":"4f0c9a52-1b7e-4d3a-9c21-huge00000001","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/work/huge"}`)
	entries, parent := 0, "null"
	next := func(body string) {
		entries++
		id := fmt.Sprintf("%08x", entries)
		ts := start.Add(time.Duration(entries) * time.Second).Format("2006-01-02T15:04:05.000Z")
		line(fmt.Sprintf(`{"type":"message","id":"%s","parentId":%s,"timestamp":"%s","message":%s}`, id, parent, ts, body))
		parent = strconv.Quote(id)
	}
	for written < size {
		ms := start.Add(time.Duration(entries) * time.Second).UnixMilli()
		next(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"%s"}],"timestamp":%d}`, text(200+rng.IntN(400)), ms))
		call := fmt.Sprintf("call_%d", entries)
		next(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"%s"},{"type":"toolCall","id":"%s","name":"bash","arguments":{"command":"go test ./..."}}],"api":"openai-completions","provider":"test","model":"test-model","usage":{"input":%d,"output":%d,"cacheRead":0,"cacheWrite":0,"totalTokens":%d,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":%d}`,
			text(100+rng.IntN(600)), call, 1000+entries, 50+rng.IntN(500), 1100+entries, ms))
		next(fmt.Sprintf(`{"role":"toolResult","toolCallId":"%s","toolName":"bash","content":[{"type":"text","text":"%s"}],"isError":false,"timestamp":%d}`,
			call, text(1<<10+rng.IntN(15<<10)), ms))
	}
	require.NoError(b, w.Flush())
	return entries, hex.EncodeToString(h.Sum(nil))
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(b *testing.B, path string) string {
	b.Helper()
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(b, err)
	return hex.EncodeToString(h.Sum(nil))
}
