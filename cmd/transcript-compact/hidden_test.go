package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestJob_HiddenSessionsKeepTheirPayloads: an object named like a session's key
// prefix (a file an S3 tool copied to acme/coder/hidden) hides that session's
// segments from MinIO's listings, so the payloads only it references look
// unreferenced. The job must not mark them for deletion (a later run would
// delete them: the session's images lost for good); it names the hiding object
// and exits 1, with and without --ns, in a dry run too. It used to mark the
// payload and exit 0 without a word.
func TestJob_HiddenSessionsKeepTheirPayloads(t *testing.T) {
	ctx := context.Background()
	url := stores()["minio"](t)
	s := openStore(t, url)
	w := transcript.NewRandomWriter()
	image := func(id string, seed byte) []byte {
		data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune('a'+seed)), transcript.DefaultPayloadThreshold)))
		return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, id, data))
	}
	hidden := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "hidden"}
	shown := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "shown"}
	_, err := s.AppendSegment(ctx, hidden, [][]byte{image("a", 0)}, w)
	require.NoError(t, err)
	_, err = s.AppendSegment(ctx, shown, [][]byte{image("b", 1)}, w)
	require.NoError(t, err)
	hider := strings.TrimSuffix(s.SessionPrefix(hidden), "/")
	note := []byte("a note copied to the wrong place")
	require.NoError(t, s.Bucket().Put(ctx, hider, bytes.NewReader(note), int64(len(note)), bucket.PutOptions{}))
	before := snapshot(t, s.Bucket())

	for _, args := range [][]string{{"--dry-run"}, nil, {"--ns", "acme"}, {"--ns", "acme", "--agent", "coder"}} {
		t.Run(strings.Join(append([]string{"args"}, args...), " "), func(t *testing.T) {
			r := runBinary(t, ctx, append([]string{"--store", url, "--json", "--delete-delay", "0"}, args...)...)
			require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, cli.HidingHint([]string{hider}))
			sum := r.summary(t)
			require.Equal(t, []string{hider}, sum.HidingObjects)
			require.Zero(t, sum.PayloadsMarked, "a payload of the hidden session looks unreferenced")
			requireSchema(t, []byte(r.stdout), "transcript-compact")
			require.Equal(t, before, snapshot(t, s.Bucket()))
		})
	}
	r := runBinary(t, ctx, "--store", url, "--delete-delay", "0")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "payloads of namespace acme: not collected")

	// Once the object is moved away, the session lists again and nothing is marked.
	require.NoError(t, s.Bucket().Delete(ctx, hider))
	r = runBinary(t, ctx, "--store", url, "--json", "--delete-delay", "0")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.summary(t).HidingObjects)
	require.Zero(t, r.summary(t).PayloadsMarked)
}

// TestJob_FolderHidingSegmentsKeepsThem: an object named like a folder of a
// session (".../s1/L0", an `aws s3 cp` without its trailing "/") hides the
// segments under it from MinIO's listings: here the newest write, with an
// image. The job names the object and exits 1; it marks no payload of the
// hidden segment; a retention policy that would delete the session from what
// it sees deletes nothing. It used to mark the payload, and retention deleted
// the visible history and the object, leaving the hidden write alone.
func TestJob_FolderHidingSegmentsKeepsThem(t *testing.T) {
	ctx := context.Background()
	url := stores()["minio"](t)
	s := openStore(t, url)
	w := transcript.NewRandomWriter()
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
	for _, id := range []string{"a", "b"} {
		_, err := s.AppendSegment(ctx, ref, [][]byte{entry(id, "")}, w)
		require.NoError(t, err)
	}
	r := runBinary(t, ctx, "--store", url, "--delete-delay", "0", "--min-segments", "2")
	require.Equal(t, 0, r.code, r.stderr)
	data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("i", transcript.DefaultPayloadThreshold)))
	img := []byte(fmt.Sprintf(`{"type":"message","id":"img","parentId":"b","timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, data))
	_, err := s.AppendSegment(ctx, ref, [][]byte{img}, w)
	require.NoError(t, err)
	hider := s.SessionPrefix(ref) + "L0"
	require.NoError(t, s.Bucket().Put(ctx, hider, bytes.NewReader([]byte("x")), 1, bucket.PutOptions{}))
	// A newer session: --keep-last 1 selects s1.
	_, err = s.AppendSegment(ctx, transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s2"}, [][]byte{entry("c", "")}, w)
	require.NoError(t, err)
	before := snapshot(t, s.Bucket())

	for _, args := range [][]string{{"--dry-run"}, nil, {"--ns", "acme", "--keep-last", "1"}} {
		t.Run(strings.Join(append([]string{"args"}, args...), " "), func(t *testing.T) {
			r := runBinary(t, ctx, append([]string{"--store", url, "--json", "--delete-delay", "0"}, args...)...)
			require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, cli.HidingHint([]string{hider}))
			sum := r.summary(t)
			require.Equal(t, []string{hider}, sum.HidingObjects)
			require.Zero(t, sum.PayloadsMarked)
			if sum.Retention != nil {
				require.Equal(t, 1, sum.Retention.Failed)
				require.Zero(t, sum.Retention.Deleted)
			}
			require.Equal(t, before, snapshot(t, s.Bucket()))
		})
	}
}

// TestJob_ObjectHidingANamespaceIsNamed: an object named like a namespace's key
// prefix (jobs/acme) hides the whole namespace from MinIO's listings: a run over
// every namespace skipped it without a word and exited 0. It names the object
// and exits 1; a run of another --ns does not look there.
func TestJob_ObjectHidingANamespaceIsNamed(t *testing.T) {
	ctx := context.Background()
	url := stores()["minio"](t)
	s := openStore(t, url)
	w := transcript.NewRandomWriter()
	for _, ns := range []string{"acme", "beta"} {
		for _, id := range []string{"a", "b"} {
			_, err := s.AppendSegment(ctx, transcript.TranscriptRef{Namespace: ns, AgentID: "coder", SessionID: "s1"}, [][]byte{entry(id, "")}, w)
			require.NoError(t, err)
		}
	}
	hider := strings.TrimSuffix(cli.NamespaceKeyPrefix(s, "acme"), "/")
	require.NoError(t, s.Bucket().Put(ctx, hider, bytes.NewReader([]byte("x")), 1, bucket.PutOptions{}))

	r := runBinary(t, ctx, "--store", url, "--json", "--dry-run")
	require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, cli.HidingHint([]string{hider}))
	require.Equal(t, []string{hider}, r.summary(t).HidingObjects)
	requireSchema(t, []byte(r.stdout), "transcript-compact")

	r = runBinary(t, ctx, "--store", url, "--json", "--dry-run", "--ns", "beta")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.summary(t).HidingObjects)
}
