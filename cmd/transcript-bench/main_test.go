package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// TestMain lets the test binary serve as the runner's child process: run
// re-executes os.Executable, which under `go test` is this binary. The parent
// process must not leak goroutines (its children exit).
func TestMain(m *testing.M) {
	if os.Getenv(envSpawn) != "" { // before envChild, which a spawner inherits
		os.Exit(spawnMain(os.Args[1:]))
	}
	if g := os.Getenv(envChild); g != "" {
		os.Exit(childMain(g))
	}
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of the S3 client the parent uses to prepare
		// and check buckets outlive a test; they are the transport's, not the bench's.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}

// TestRun_Quick runs the whole runner with tiny sizes against an in-memory store and
// against MinIO, and checks that the report holds every item with sane figures.
func TestRun_Quick(t *testing.T) {
	tests := []struct {
		name string
		// store returns the --store URL.
		store func(t *testing.T) string
		// skipped are the items that must be reported as skipped.
		skipped []int
	}{
		{"mem", func(*testing.T) string { return "mem://" }, []int{5, 6, 11, 12, 18}},
		{"minio", minioURL, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.store(t)
			dir := t.TempDir()
			jsonPath, mdPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "BENCHMARKS.md")
			require.NoError(t, os.WriteFile(mdPath, []byte("# Title\n\nprose before\n\n"+markStart+"\nold\n"+markEnd+"\n\nprose after\n"), 0o644))
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), []string{"--store", store, "--quick", "--scale", "0.02", "--json", jsonPath, "--markdown", mdPath}, &stdout, &stderr)
			require.NoError(t, err, "stderr:\n%s", stderr.String())
			t.Log(stderr.String())

			var rep Report
			data, err := os.ReadFile(jsonPath)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &rep))
			requireSchema(t, data, "transcript-bench")
			require.Equal(t, "quick", rep.Mode)
			require.Positive(t, rep.Machine.Cores)
			byItem := map[int][]Row{}
			for _, it := range rep.Items {
				require.Empty(t, it.Error, it.Group)
				if it.Skipped == "" {
					require.Positive(t, it.PeakRSSKiB, "%s: peak RSS", it.Group)
				}
				for _, r := range it.Rows {
					byItem[r.Item] = append(byItem[r.Item], r)
				}
			}
			var items []int
			for _, g := range groups {
				items = append(items, g.items...)
			}
			for _, item := range items {
				rows := byItem[item]
				require.NotEmpty(t, rows, "item %d missing from the report", item)
				for _, r := range rows {
					if r.Skipped != "" {
						require.True(t, slices.Contains(tt.skipped, item) || r.Skipped == "rclone not on PATH",
							"item %d (%s) skipped: %s", item, r.Name, r.Skipped)
						continue
					}
					require.False(t, slices.Contains(tt.skipped, item), "item %d should be skipped", item)
					// A latency can be zero (item 17: delivered on the other server
					// before the append's answer reached its client), never negative.
					sane := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
					require.True(t, sane(r.Value), "item %d %q: value %v", item, r.Name, r.Value)
					if r.Baseline != "" {
						require.True(t, sane(r.BaselineValue), "item %d %q: baseline %v", item, r.Name, r.BaselineValue)
						require.True(t, sane(r.Ratio), "item %d %q: ratio %v", item, r.Name, r.Ratio)
						require.InDelta(t, r.Value/r.BaselineValue, r.Ratio, 1e-9)
					}
				}
			}
			// The mirror's whole point: far fewer bytes than the full-file mirror.
			require.Less(t, byItem[3][0].Ratio, 1.0, "segment mirror uploads less than legacy")
			if !slices.Contains(tt.skipped, 12) {
				// Item 12 reads each session as written and compacted.
				for _, cmd := range []string{"restore", "export", "context", "verify"} {
					var written, compacted int
					for _, r := range byItem[12] {
						switch {
						case strings.HasPrefix(r.Name, cmd+" of a compacted "):
							compacted++
						case strings.HasPrefix(r.Name, cmd+" of a "):
							written++
						}
					}
					require.Equal(t, 2, written, "%s: a peak RSS and a time row as written", cmd)
					require.Equal(t, 2, compacted, "%s: a peak RSS and a time row compacted", cmd)
				}
			}

			md, err := os.ReadFile(mdPath)
			require.NoError(t, err)
			s := string(md)
			require.True(t, strings.HasPrefix(s, "# Title\n\nprose before\n\n"+markStart), s)
			require.True(t, strings.HasSuffix(s, markEnd+"\n\nprose after\n"), s)
			require.NotContains(t, s, "\nold\n")
			require.Contains(t, s, "| 8 | cost to write 1,000 turns")
			for _, c := range []string{"open-latency.svg", "mirror-bytes.svg"} {
				require.Contains(t, s, "docs/bench/"+c)
				st, err := os.Stat(filepath.Join(dir, "docs", "bench", c))
				require.NoError(t, err)
				require.Positive(t, st.Size())
			}
			require.Contains(t, stdout.String(), "cost to write 1,000 turns")
			require.NotContains(t, stdout.String(), "SECRET")
		})
	}
}

// minioURL returns an s3:// URL of a new bucket on the test MinIO, removed at the end
// (the runner deletes what it wrote under its prefix).
func minioURL(t *testing.T) string {
	endpoint, access, secret := s3test.S3Endpoint(t)
	rnd := make([]byte, 4)
	_, err := rand.Read(rnd)
	require.NoError(t, err)
	name := "bench-test-" + hex.EncodeToString(rnd)
	b, err := s3bucket.New(t.Context(), s3bucket.Config{Endpoint: endpoint, AccessKey: access, SecretKey: secret,
		Insecure: true, Create: true, Bucket: name})
	require.NoError(t, err)
	t.Cleanup(func() {
		defer b.Close()
		// Fails (and says so) if the runner left anything behind.
		require.NoError(t, b.Client().RemoveBucket(context.Background(), name))
	})
	return "s3://" + name + "/prefix?endpoint=" + endpoint + "&insecure=true"
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
		check   func(t *testing.T, o options)
	}{
		{args: nil, check: func(t *testing.T, o options) {
			require.Equal(t, "mem://", o.store)
			require.False(t, o.quick)
			require.Empty(t, o.chartsDir)
		}},
		{args: []string{"--markdown", "x/B.md", "--items", "3, 8"}, check: func(t *testing.T, o options) {
			require.Equal(t, filepath.Join("x", "docs", "bench"), o.chartsDir)
			require.Equal(t, []int{3, 8}, o.items)
		}},
		{args: []string{"--items", "99"}, wantErr: "not an item number"},
		{args: []string{"--items", "9,10"}, check: func(t *testing.T, o options) { require.Equal(t, []int{9, 10}, o.items) }},
		{args: []string{"--scale", "2"}, wantErr: "--scale"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
		{args: []string{"--trace", "t", "--cpuprofile", "c"}, check: func(t *testing.T, o options) {
			require.Equal(t, "t", o.traceDir)
			require.Equal(t, "c", o.cpuProfileDir)
		}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o, err := parseFlags(tt.args, &bytes.Buffer{})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, o)
		})
	}
}

// TestRun_Trace runs item 4 with --trace and --cpuprofile: its child writes an
// execution trace that holds the store's read tasks and regions, and a CPU profile.
func TestRun_Trace(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "prof")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"--store", "mem://", "--quick", "--scale", "0.02", "--items", "4",
		"--trace", out, "--cpuprofile", out}, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())
	data, err := os.ReadFile(filepath.Join(out, "open.trace"))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("go 1.")), "a Go execution trace")
	// The trace's string table names the task and regions of an open.
	for _, name := range []string{"transcript.ReadAll", "list segments", "get segment", "parse entries", "merge entries", "verify segment"} {
		require.True(t, bytes.Contains(data, []byte(name)), "the trace names %q", name)
	}
	prof, err := os.Stat(filepath.Join(out, "open.cpu.pprof"))
	require.NoError(t, err)
	require.Positive(t, prof.Size())
}

// TestParseFlags_UsageErrorsExit2: a bad command line is a usage error (exit 2)
// with a short message, like the other commands'.
func TestParseFlags_UsageErrorsExit2(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--quik"}, "unknown flag --quik (did you mean --quick?)"},
		{[]string{"--items", "99"}, "not an item number"},
		{[]string{"--store", "ftp://x"}, `unknown scheme "ftp"`},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(tt.args, &bytes.Buffer{})
		var stderr bytes.Buffer
		require.Equal(t, 2, cli.ExitCode(err, &stderr, "transcript-bench --help"), "%v", tt.args)
		require.Contains(t, stderr.String(), tt.stderr)
	}
	var help bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &help)
	require.Equal(t, 0, cli.ExitCode(err, &bytes.Buffer{}, ""))
	require.Contains(t, help.String(), "--store URL")
	// 'help', as the other binaries take it, is the help too.
	var word bytes.Buffer
	_, err = parseFlags([]string{"help"}, &word)
	require.Equal(t, 0, cli.ExitCode(err, &bytes.Buffer{}, ""))
	require.Equal(t, help.String(), word.String())
	require.NotContains(t, help.String(), "--scale", "hidden")
}

func TestCommandLine_RedactsTheStore(t *testing.T) {
	got := commandLine([]string{"--store", "s3://b/p?endpoint=h:9000&secret_key=abc", "--quick"})
	require.NotContains(t, got, "abc")
	require.True(t, strings.HasPrefix(got, "go run ./cmd/transcript-bench --store '"), got)
	require.True(t, strings.HasSuffix(got, "' --quick"), got)
}

func TestMedianOf(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{ms(7), 7 * time.Millisecond},
		{ms(3, 1, 2), 2 * time.Millisecond},
		{ms(4, 1), 2500 * time.Microsecond},
		{ms(6298, 5114, 5215, 6098), 5656500 * time.Microsecond}, // not 6098: the two middle values
		{ms(9, 1, 5, 3, 7, 100), 6 * time.Millisecond},
	} {
		require.Equal(t, tc.want, medianOf(tc.in), "%v", tc.in)
	}
}

func TestChunk(t *testing.T) {
	entries := flatten(session("s", 1, 10)) // 31 entries with the header
	for _, n := range []int{1, 3, 10, 31, 100} {
		parts := chunk(entries, n)
		require.Len(t, parts, min(n, len(entries)))
		var all [][]byte
		for _, p := range parts {
			require.NotEmpty(t, p)
			all = append(all, p...)
		}
		require.Equal(t, entries, all)
	}
}

func TestSession_Deterministic(t *testing.T) {
	a, b := session("s", 7, 5), session("s", 7, 5)
	require.Equal(t, a, b)
	require.NotEqual(t, a, session("s", 8, 5))
	for _, e := range flatten(a) {
		require.True(t, json.Valid(e), "%s", e)
	}
	require.Contains(t, string(a[0][2]), `"type":"toolCall"`)
	require.Contains(t, string(a[0][2]), `"usage":{`)
}

// requireSchema requires data to be the shape $defs/def of docs/cli-json.schema.json
// gives it.
func requireSchema(t *testing.T, data []byte, def string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile("../../docs/cli-json.schema.json#/$defs/" + def)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	require.NoError(t, sch.Validate(inst))
}
