package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestJob_CollectsPayloads: the job marks the payload object of a deleted session
// and keeps it while its delay runs (at least two minutes whatever
// --delete-delay says); a payload still referenced is never marked; a dry run
// counts and changes nothing; --agent leaves payloads alone.
func TestJob_CollectsPayloads(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := newURL(t)
			s := openStore(t, url)
			w := transcript.NewRandomWriter()
			image := func(id string, seed byte) []byte {
				data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune('a'+seed)), transcript.DefaultPayloadThreshold)))
				return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, id, data))
			}
			gone := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "gone"}
			kept := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "kept"}
			_, err := s.AppendSegment(ctx, gone, [][]byte{image("a", 0)}, w)
			require.NoError(t, err)
			_, err = s.AppendSegment(ctx, kept, [][]byte{image("b", 1)}, w)
			require.NoError(t, err)
			require.NoError(t, s.Delete(ctx, gone))
			before := snapshot(t, s.Bucket())

			for _, args := range [][]string{{"--dry-run"}, {"--agent", "coder"}} {
				r := runBinary(t, ctx, append([]string{"--store", url, "--json", "--delete-delay", "0"}, args...)...)
				require.Equal(t, 0, r.code, r.stderr)
				if args[0] == "--dry-run" {
					require.Equal(t, 1, r.summary(t).PayloadsMarked)
				} else {
					require.Zero(t, r.summary(t).PayloadsMarked)
				}
				require.Equal(t, before, snapshot(t, s.Bucket()))
			}
			r := runBinary(t, ctx, "--store", url, "--json", "--delete-delay", "0")
			require.Equal(t, 0, r.code, r.stderr)
			require.Equal(t, 1, r.summary(t).PayloadsMarked)
			r = runBinary(t, ctx, "--store", url, "--json", "--delete-delay", "0")
			require.Equal(t, 0, r.code, r.stderr)
			sum := r.summary(t)
			require.Equal(t, 1, sum.PayloadsPending, "a payload mark waits at least two minutes")
			require.Zero(t, sum.PayloadsDeleted)
			res, err := s.ReadAll(ctx, kept)
			require.NoError(t, err)
			require.Equal(t, [][]byte{image("b", 1)}, res.Raw())
		})
	}
}

// TestJob_PayloadCollectionFailureExits1: when the collection of a namespace's
// payloads fails (here: a segment whose metadata does not verify, so its
// references cannot be known and nothing may be deleted), the job names the
// namespace and exits 1, and a pushed run is no success; it used to list the
// error in the summary and exit 0. Whether the failing segment's own session is
// compacted (it is not here: one segment) does not matter.
func TestJob_PayloadCollectionFailureExits1(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := newURL(t)
			s := openStore(t, url)
			data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("p", transcript.DefaultPayloadThreshold)))
			img := []byte(fmt.Sprintf(`{"type":"message","id":"a","parentId":null,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, data))
			_, err := s.AppendSegment(ctx, transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "img"}, [][]byte{img}, transcript.NewRandomWriter())
			require.NoError(t, err)
			junk := []byte("not a segment")
			key := "acme/coder/bad/L0/20261203T000000.000000000Z-evil-0000000000000001-0000000000000000.jsonl.zst"
			if s.Prefix() != "" {
				key = s.Prefix() + "/" + key
			}
			require.NoError(t, s.Bucket().Put(ctx, key,
				bytes.NewReader(junk), int64(len(junk)), bucket.PutOptions{}))
			for _, tc := range []struct {
				name string
				args []string
			}{
				{"text", nil},
				{"json", []string{"--json"}},
				{"dry run", []string{"--json", "--dry-run"}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := runBinary(t, ctx, append([]string{"--store", url, "--delete-delay", "0"}, tc.args...)...)
					require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
					require.Contains(t, r.stderr, "payloads of namespace acme")
					if len(tc.args) > 0 {
						require.NotEmpty(t, r.summary(t).Errors)
					}
				})
			}
		})
	}
}
