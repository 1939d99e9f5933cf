package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// bigImage returns a user message holding an image of n bytes of base64.
func bigImage(id, parent string, n int) (entry, data string) {
	r := rand.New(rand.NewPCG(uint64(n), 2))
	raw := make([]byte, n)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	data = base64.StdEncoding.EncodeToString(raw)[:n]
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, id, parent, data), data
}

// TestPayloads_CLI: a session whose entries hold a large image (stored once,
// outside the segments) reads back byte for byte through cat; verify checks the
// payload (and with --no-payloads only that it exists); stats counts it and the
// references that share it; a damaged or missing payload is a verify problem.
func TestPayloads_CLI(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "store")
	store := "file://" + dir
	s := fileStore(t, dir)
	const size = transcript.DefaultPayloadThreshold + 1000
	img1, data := bigImage("i1", "e1", size)
	img2 := strings.Replace(img1, `"id":"i1"`, `"id":"i2"`, 1)
	want := []string{headerLine("s"), entryLine("e1", ""), img1, img2}
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	var batch [][]byte
	for _, e := range want {
		batch = append(batch, []byte(e))
	}
	_, err := s.AppendSegment(ctx, ref, batch, transcript.NewRandomWriter())
	require.NoError(t, err)

	r := cli(t, "cat", "--store", store, "--agent", "a", "--session", "s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, strings.Join(want, "\n")+"\n", r.stdout)

	r = cli(t, "tree", "--store", store, "--agent", "a", "--session", "s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "[image]")

	r = cli(t, "stats", "--store", store, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var st storeStats
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
	require.Equal(t, 1, st.Payloads.Count)
	require.Equal(t, 2, st.Payloads.References)
	require.Equal(t, int64(size), st.Payloads.Bytes)
	require.Equal(t, int64(2*size), st.Payloads.ReferencedBytes)
	require.Positive(t, st.Payloads.StoredBytes)
	require.Less(t, st.Bytes, int64(size/2), "the segments hold no image")

	for _, args := range [][]string{nil, {"--no-payloads"}} {
		r = cli(t, append([]string{"verify", "--store", store, "--json"}, args...)...)
		require.Equal(t, 0, r.code, r.stdout+r.stderr)
		var sum verifySummary
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum))
		require.Equal(t, 1, sum.Payloads)
	}

	h := sha256.Sum256([]byte(data))
	obj := filepath.Join(dir, "default", "payloads", hex.EncodeToString(h[:])+".zst")
	good, err := os.ReadFile(obj)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(obj, good[:len(good)/2], 0o644))
	r = cli(t, "verify", "--store", store)
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "payload "+hex.EncodeToString(h[:]))
	require.Contains(t, r.stdout, " bytes, 2 references): ", "the references counted in words")
	r = cli(t, "verify", "--store", store, "--no-payloads")
	require.Equal(t, 0, r.code, "--no-payloads reads no payload: %s", r.stdout)

	require.NoError(t, os.Remove(obj))
	for _, args := range [][]string{nil, {"--no-payloads"}} {
		r = cli(t, append([]string{"verify", "--store", store}, args...)...)
		require.Equal(t, 1, r.code, r.stdout+r.stderr)
		require.Contains(t, r.stdout, "payload object missing")
	}
	r = cli(t, "cat", "--store", store, "--agent", "a", "--session", "s")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "payload object missing")
	for _, args := range [][]string{{"ls"}, {"tree", "--agent", "a", "--session", "s"}, {"stats"}} {
		r = cli(t, append(args, "--store", store)...)
		require.Equal(t, 0, r.code, "%v reads no payload: %s", args, r.stderr)
	}
}
