package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minio/madmin-go/v3"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
)

// TestFindings_Smaller holds smaller findings of a review of the command line,
// one row each. Others of that review have tests of their own: help on stdout and --version
// (TestContract_HelpVersionAndWrongFlags), the JSON shapes (TestJSON_*), a read
// command's missing bucket (TestFindings_ReadOnlyCommandsCreateNoBucket), the
// namespace hint (TestFindings_NamespaceNotFound), --trust-headers
// (cmd/transcript-serve TestTrustHeadersWarns), log durations (server
// TestEdge_LogDurations) and the Kubernetes images (cmd/transcript-compact
// TestManifests_PinnedImages).
func TestFindings_Smaller(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"token --ttl 0 or less is a usage error", func(t *testing.T) {
			for _, ttl := range []string{"0", "-1h"} {
				r := cliWith(t, cmdOpts{bin: builtBinary(t, "transcript-serve"), env: []string{"TRANSCRIPT_JWT_KEY=k"}},
					"token", "--tenant", "a", "--user", "b", "--ttl", ttl)
				require.Equal(t, 2, r.code, "--ttl %s: %s", ttl, r.stdout)
				require.Empty(t, r.stdout, "no token printed")
				require.Contains(t, r.stderr, "want more than 0")
			}
		}},
		{"one --parallel default", func(t *testing.T) {
			for _, args := range [][]string{{"ls"}, {"stats"}, {"verify"}, {"restore"}} {
				require.Regexp(t, `--parallel int +sessions \w+ at once \(default 8\)`, ok(t, append(args, "--help")...), args)
			}
			r := runBinary(t, builtBinary(t, "transcript-compact"), "", "--help")
			require.Regexp(t, `--parallel int +sessions compacted at once \(default 8\)`, r.stdout)
		}},
		{"counts of one are singular", func(t *testing.T) {
			store := "file://" + t.TempDir()
			r := cliWith(t, cmdOpts{stdin: headerLine("s") + "\n" + entryLine("e1", "gone") + "\n"}, "append", "--store", store, "--agent", "a", "--session", "s")
			require.Equal(t, 0, r.code, r.stderr)
			r = cli(t, "verify", "--store", store)
			require.Equal(t, 1, r.code)
			require.Contains(t, r.stdout, "\n1 problem in 1 segment of 1 session (1 entry, not counting 1 session header)\n")
			r = runBinary(t, builtBinary(t, "transcript-compact"), "", "--store", store)
			require.Equal(t, 0, r.code, r.stderr)
			require.Regexp(t, `^shard 0/1: 1 session scanned, compacted 0 \(0 segments, 0 bytes -> 0 segments, 0 bytes\)`, r.stdout)
		}},
		{"access denied names each key once and says where credentials come from", testAccessDenied},
		{"the docs name the four binaries and every command", func(t *testing.T) {
			readme := readFile(t, "../../README.md")
			require.Contains(t, readme, "# bin/transcript, bin/transcript-compact, bin/transcript-serve, bin/transcript-bench")
			require.Contains(t, readme, "what the four binaries share")
			for _, doc := range []string{"README.md", "DESIGN.md", "RELIABILITY.md", "BENCHMARKS.md", "docs/STORAGE.md", "server/openapi.yaml"} {
				require.NotContains(t, readFile(t, "../../"+doc), "transcript serve", "%s: the binary is transcript-serve", doc)
			}
			design := readFile(t, "../../DESIGN.md")
			line := regexp.MustCompile(`(?m)^cmd/transcript +operator CLI: (.*)$`).FindStringSubmatch(design)
			require.NotNil(t, line, "DESIGN.md lists the commands of cmd/transcript")
			require.ElementsMatch(t, binaryCommands["transcript"][1:], strings.Split(line[1], ", "))
			require.Contains(t, readFile(t, "../../RELIABILITY.md"), "`transcript-serve`", "RELIABILITY.md has the server's rows")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.fn)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// testAccessDenied runs append and ls as a MinIO user with the read-only policy of
// deploy/iam/restore.json: the append is refused, its error names the segment key
// once, and a hint about credentials follows; nothing is written.
func testAccessDenied(t *testing.T) {
	endpoint, access, secret := s3test.S3Endpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := s3BackendAt("p").fresh(t)
	r := cliWith(t, cmdOpts{stdin: headerLine("s") + "\n"}, "append", "--store", store, "--agent", "a", "--session", "s")
	require.Equal(t, 0, r.code, r.stderr)
	u, err := url.Parse(store)
	require.NoError(t, err)
	adm, err := madmin.New(endpoint, access, secret, false)
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "iam", "restore.json"))
	require.NoError(t, err)
	policy := strings.NewReplacer("BUCKET", u.Host, "PREFIX", "p").Replace(string(raw))
	user := fmt.Sprintf("cli-ro-%d-%d", os.Getpid(), time.Now().UnixNano())
	require.NoError(t, adm.AddCannedPolicy(ctx, user, []byte(policy)))
	require.NoError(t, adm.AddUser(ctx, user, user+"-secret"))
	t.Cleanup(func() {
		_ = adm.RemoveUser(context.Background(), user)
		_ = adm.RemoveCannedPolicy(context.Background(), user)
	})
	_, err = adm.AttachPolicy(ctx, madmin.PolicyAssociationReq{Policies: []string{user}, User: user})
	require.NoError(t, err)
	creds := []string{"AWS_ACCESS_KEY_ID=" + user, "AWS_SECRET_ACCESS_KEY=" + user + "-secret"}
	noCreate := strings.Replace(store, "&create=true", "", 1)

	r = cliWith(t, cmdOpts{env: creds}, "ls", "--store", noCreate)
	require.Equal(t, 0, r.code, "the read-only role lists: %s", r.stderr)
	before := s3Backend().snapshot(t, store)
	r = cliWith(t, cmdOpts{env: creds, stdin: entryLine("e1", "") + "\n"}, "append", "--store", noCreate, "--agent", "a", "--session", "s")
	require.Equal(t, 1, r.code, r.stderr)
	require.Empty(t, r.stdout)
	key := regexp.MustCompile(`p/default/a/s/L0/\S+\.jsonl\.zst`).FindString(r.stderr)
	require.NotEmpty(t, key, r.stderr)
	require.Equal(t, 1, strings.Count(r.stderr, key), "the key once: %s", r.stderr)
	require.Contains(t, r.stderr, "access denied")
	require.Contains(t, r.stderr, "\nHint: the store refused these credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)")
	require.Equal(t, before, s3Backend().snapshot(t, store), "nothing written")
}
