package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// piCycleCases are sessions whose stored entries form parent cycles, as a
// buggy or hostile writer can store them (each segment is valid alone). Each
// is the segments stored after the header, one entry "id:parent" ("id:" a
// root) at a time or several in one segment; cycle names the ids that lie on a
// cycle, leaf the last entry line Pi gets.
var piCycleCases = []struct {
	name     string
	segments []string
	cycle    string
}{
	{"2-cycle, the leaf on it", []string{"r: u:r", "ca:cb", "cb:ca"}, "ca cb"},
	{"3-cycle, the leaf on it", []string{"r: u:r", "c1:c3", "c2:c1", "c3:c2"}, "c1 c2 c3"},
	{"self-parent, the leaf on it", []string{"r: u:r", "self:self"}, "self"},
	{"self-parent with a child, the leaf below it", []string{"r:", "self:self", "sk:self"}, "self"},
	{"cycle with descendants, the leaf below it", []string{"r: u:r", "ca:cb", "cb:ca", "kid:ca kid2:kid"}, "ca cb"},
	{"cycle plus a normal branch, the leaf outside", []string{"r: u:r", "ca:cb", "cb:ca kid:ca", "u2:u"}, "ca cb"},
	{"3-cycle with a descendant, the leaf outside", []string{"c1:c3", "c2:c1", "c3:c2 k:c2", "r: u:r"}, "c1 c2 c3"},
	{"a branch of the tree grown into a cycle", []string{"r: a:r b:a", "ca:cb", "cb:ca x:b", "y:ca"}, "ca cb"},
}

// TestRestore_PiLayoutCycles: restore --layout pi leaves the entries on a
// parent cycle out of the session's file (their descendants stay), names them
// and exits 1; Pi 0.58 and Pi 1.6 open every file it wrote, at its leaf and at
// each of its entries (what /fork and /tree reach), within a time limit, and
// build the context `transcript context --file` builds; the sessiontree layout
// and export keep every entry.
func TestRestore_PiLayoutCycles(t *testing.T) {
	node := needPiPackage(t, "@mariozechner/pi-coding-agent")
	needPiPackage(t, "@earendil-works/pi-coding-agent")
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")
	b, prefix, err := bucketurl.Open(t.Context(), store)
	require.NoError(t, err)
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	defer s.Close()
	w, err := transcript.NewWriter("hostile")
	require.NoError(t, err)

	var asks piAsks
	for n, tc := range piCycleCases {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("cyc%d", n)
			ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: id}
			header := strings.Replace(headerLine(id), `"cwd":"/work"`, fmt.Sprintf(`"cwd":"/work/%d"`, n), 1)
			var all []string // every entry line stored, in the order stored
			for k, seg := range tc.segments {
				batch := [][]byte{}
				if k == 0 {
					batch = append(batch, []byte(header))
				}
				for _, l := range strings.Fields(seg) {
					eid, parent, _ := strings.Cut(l, ":")
					line := messageLine(eid, parent, "text of "+eid)
					batch = append(batch, []byte(line))
					all = append(all, line)
				}
				_, err := s.AppendSegment(t.Context(), ref, batch, w)
				require.NoError(t, err, "the store takes segment %d", k)
			}
			cycle := map[string]bool{}
			for _, c := range strings.Fields(tc.cycle) {
				cycle[c] = true
			}

			out := filepath.Join(dir, "pi-"+id)
			r := cli(t, "restore", "--layout", "pi", "--out", out, "--store", store, "--agent", "coder", "--session", id, "--json")
			file := filepath.Join(out, fmt.Sprintf("--work-%d--", n), "2026-09-25T22-28-55-554Z_"+id+".jsonl")
			data, err := os.ReadFile(file)
			require.NoError(t, err, r.stdout+r.stderr)
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			// Pi at the file's leaf and at each of its entries (asked below,
			// whatever the checks here find).
			asks.addFile(t, file, data, dir)

			assert.Equal(t, 1, r.code, "a session written without some entries is not restored whole: %s %s", r.stdout, r.stderr)
			var sum restoreSummary
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &sum), r.stdout)
			assert.Equal(t, 1, sum.Restored, r.stdout)
			if assert.Len(t, sum.LeftOut, 1, r.stdout) {
				assert.ElementsMatch(t, strings.Fields(tc.cycle), sum.LeftOut[0].Entries)
				assert.Equal(t, whyCycle, sum.LeftOut[0].Reason)
				assert.Equal(t, file, sum.LeftOut[0].File)
			}
			assert.Contains(t, r.stderr, "coder/"+id+": ")
			assert.Contains(t, r.stderr, whyCycle)
			require.Equal(t, header, lines[0])
			var kept []string
			for _, l := range all {
				var e struct{ ID string }
				require.NoError(t, json.Unmarshal([]byte(l), &e))
				if !cycle[e.ID] {
					kept = append(kept, l)
				}
			}
			assert.ElementsMatch(t, kept, lines[1:], "every entry off the cycle, byte for byte, and none on it")

			// A second run finds the file as it would write it, and says again
			// what it lacks.
			r = cli(t, "restore", "--layout", "pi", "--out", out, "--store", store, "--agent", "coder", "--session", id)
			require.Equal(t, 1, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "restored 0, skipped 1")
			require.Contains(t, r.stderr, whyCycle)

			// Our formats keep everything.
			exp := ok(t, "export", "--store", store, "--agent", "coder", "--session", id)
			require.Len(t, strings.Split(strings.TrimSpace(exp), "\n"), 1+len(all))
			r = cli(t, "restore", "--out", filepath.Join(dir, "st-"+id), "--store", store, "--agent", "coder", "--session", id)
			require.Equal(t, 0, r.code, r.stdout+r.stderr)

		})
	}
	asks.requireBothPisBuild(t, node, dir, "cycles")
}
