package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// TestRestore_PayloadsOutsideAsInline: restore writes the same files for
// sessions whose images are stored outside their segments as for the same
// sessions stored inline, one session alone (its own listing) or several
// (one listing of the namespace, sessions fetched ahead); a missing payload
// fails its session and leaves no context file for it.
func TestRestore_PayloadsOutsideAsInline(t *testing.T) {
	ctx := t.Context()
	header := string(pi.NewHeader("h", time.Date(2026, 9, 25, 22, 28, 55, 0, time.UTC), "/w", "").Raw())
	img1, data1 := bigImage("i1", "e1", transcript.DefaultPayloadThreshold+1000)
	img2, _ := bigImage("i2", "i1", transcript.DefaultPayloadThreshold+2000)
	img3 := `{"type":"message","id":"i3","parentId":"i2","timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":[{"type":"image","data":"` + data1 + `","mimeType":"image/png"}]}}`
	stores := map[string]string{}
	for mode, threshold := range map[string]int{"outside": 0, "inline": -1} {
		dir := filepath.Join(t.TempDir(), mode)
		b, err := filebucket.New(dir)
		require.NoError(t, err)
		s, err := transcript.New(transcript.Config{Bucket: b, PayloadThreshold: threshold})
		require.NoError(t, err)
		defer s.Close()
		for k := range 3 {
			ref := transcript.TranscriptRef{AgentID: "a", SessionID: fmt.Sprintf("s%d", k)}
			for _, seg := range [][]string{{header, entryLine("e1", "")}, {img1, img2}, {img3}} {
				batch := make([][]byte, len(seg))
				for i, e := range seg {
					batch[i] = []byte(e)
				}
				_, err := s.AppendSegment(ctx, ref, batch, transcript.NewRandomWriter())
				require.NoError(t, err)
			}
		}
		stores[mode] = "file://" + dir
	}
	restored := func(t *testing.T, out string, k int) [2][]byte {
		t.Helper()
		f := sessiontree.FilesOf(out, transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: fmt.Sprintf("s%d", k)})
		var got [2][]byte
		for i, p := range []string{f.Log, f.Context} {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			got[i] = b
		}
		return got
	}
	for _, sel := range [][]string{{"--agent", "a", "--session", "s1"}, {"--agent", "a"}} {
		t.Run(fmt.Sprint(sel), func(t *testing.T) {
			outs := map[string]string{}
			for mode, store := range stores {
				outs[mode] = filepath.Join(t.TempDir(), mode)
				r := cli(t, append([]string{"restore", "--store", store, "--out", outs[mode]}, sel...)...)
				require.Equal(t, 0, r.code, r.stdout+r.stderr)
			}
			for k := range 3 {
				if len(sel) > 2 && k != 1 {
					continue
				}
				got, want := restored(t, outs["outside"], k), restored(t, outs["inline"], k)
				require.Equal(t, want, got, "session s%d", k)
				require.Contains(t, string(got[0]), data1)
			}
		})
	}

	// A missing payload fails the sessions that reference it, and leaves no file.
	dir := stores["outside"][len("file://"):]
	payloads, err := filepath.Glob(filepath.Join(dir, transcript.DefaultNamespace, "payloads", "*.zst"))
	require.NoError(t, err)
	require.Len(t, payloads, 2)
	for _, p := range payloads {
		require.NoError(t, os.Remove(p))
	}
	out := filepath.Join(t.TempDir(), "missing")
	r := cli(t, "restore", "--store", stores["outside"], "--out", out, "--agent", "a")
	require.Equal(t, 1, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "payload object missing")
	require.Contains(t, r.stdout, "failed 3 of 3 sessions")
	var left []string
	require.NoError(t, filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return err
	}))
	require.Empty(t, left, "no file of a failed session")
}
