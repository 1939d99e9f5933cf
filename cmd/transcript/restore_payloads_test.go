package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
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
	header := func(k int) string {
		return string(pi.NewHeader(fmt.Sprintf("h%d", k), time.Date(2026, 9, 25, 22, 28, 55, 0, time.UTC), "/w", "").Raw())
	}
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
			for _, seg := range [][]string{{header(k), entryLine("e1", "")}, {img1, img2}, {img3}} {
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
	// files returns the bytes of every file under out, and with withTime its
	// modification time (restore sets that of a file in Pi's layout).
	files := func(t *testing.T, out string, withTime bool) map[string]string {
		t.Helper()
		got := map[string]string{}
		require.NoError(t, filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			st, err := os.Stat(p)
			require.NoError(t, err)
			rel, err := filepath.Rel(out, p)
			require.NoError(t, err)
			got[rel] = string(b)
			if withTime {
				got[rel] = fmt.Sprint(st.ModTime().UTC(), " ", got[rel])
			}
			return nil
		}))
		return got
	}
	for _, layout := range []string{layoutSessionTree, layoutPi} {
		for _, sel := range [][]string{{"--agent", "a", "--session", "s1"}, {"--agent", "a"}} {
			t.Run(fmt.Sprint(layout, sel), func(t *testing.T) {
				outs := map[string]map[string]string{}
				for mode, store := range stores {
					out := filepath.Join(t.TempDir(), mode)
					r := cli(t, append([]string{"restore", "--layout", layout, "--store", store, "--out", out}, sel...)...)
					require.Equal(t, 0, r.code, r.stdout+r.stderr)
					outs[mode] = files(t, out, layout == layoutPi)
				}
				n := 0
				for rel, f := range outs["outside"] {
					if strings.HasSuffix(rel, "jsonl") {
						n++
						require.Contains(t, f, data1, rel)
					}
					if layout == layoutPi || strings.HasSuffix(rel, "jsonl") { // the segments and origins files name other segments
						require.Equal(t, outs["inline"][rel], f, rel)
					}
				}
				sessions := 3
				if slices.Contains(sel, "--session") {
					sessions = 1
				}
				perSession := map[string]int{layoutSessionTree: 2, layoutPi: 1}[layout] // the log and the context file, or Pi's file
				require.Equal(t, sessions*perSession, n, "files restored")
			})
		}
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
