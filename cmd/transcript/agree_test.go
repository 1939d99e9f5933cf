package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// TestActiveLeaf_AllReadersAgree stores sessions whose active leaf is decided by
// each rule of pi.ActiveLeaf and asks the three readers of a session: a
// SessionTree restored from the store, a repository Session's Head, and
// `transcript tree`. They must name the same entry (or none).
func TestActiveLeaf_AllReadersAgree(t *testing.T) {
	const ts = `"timestamp":"2026-01-01T00:00:00.000Z"`
	m := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,%s,"message":{"role":"user","content":%q}}`, id, p, ts, id)
	}
	leaf := func(id, parent, target string) string {
		return fmt.Sprintf(`{"type":"leaf","id":%q,"parentId":%q,%s,"targetId":%s}`, id, parent, ts, target)
	}
	tests := []struct {
		name     string
		segments [][]string // one segment each, written in order
		want     string     // "" for a null leaf
	}{
		{"the last entry", [][]string{{m("aaaa0001", ""), m("aaaa0002", "aaaa0001")}, {m("aaaa0003", "aaaa0001")}}, "aaaa0003"},
		{"a leaf entry to a known entry", [][]string{{m("aaaa0001", ""), m("aaaa0002", "aaaa0001")}, {leaf("bbbb0001", "aaaa0002", `"aaaa0001"`)}}, "aaaa0001"},
		{"a trailing leaf entry with an unknown target", [][]string{{m("aaaa0001", ""), m("aaaa0002", "aaaa0001")}, {leaf("bbbb0001", "aaaa0002", `"ffffffff"`)}}, "aaaa0002"},
		{"an unknown target after a leaf move", [][]string{{m("aaaa0001", ""), m("aaaa0002", "aaaa0001"), leaf("bbbb0001", "aaaa0002", `"aaaa0001"`)}, {leaf("bbbb0002", "aaaa0001", `"ffffffff"`)}}, "aaaa0001"},
		{"a null target", [][]string{{m("aaaa0001", "")}, {leaf("bbbb0001", "aaaa0001", "null")}}, ""},
	}
	ctx := context.Background()
	owner := repository.Owner{Tenant: "acme", User: "alice"}
	ns, err := owner.Namespace()
	require.NoError(t, err)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := filebucket.New(dir)
			require.NoError(t, err)
			store, err := transcript.New(transcript.Config{Bucket: b})
			require.NoError(t, err)
			defer store.Close()
			w, err := transcript.NewWriter("writer")
			require.NoError(t, err)
			id := fmt.Sprintf("session-%d", i)
			ref := transcript.TranscriptRef{Namespace: ns, AgentID: repository.DefaultAgentID, SessionID: id}
			header := pi.NewHeader(id, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "/work", "")
			for k, seg := range tc.segments {
				var batch [][]byte
				if k == 0 {
					batch = append(batch, header.Raw())
				}
				for _, e := range seg {
					batch = append(batch, []byte(e))
				}
				_, err := store.AppendSegment(ctx, ref, batch, w)
				require.NoError(t, err)
			}

			// The SessionTree.
			rc, err := owner.Identity()
			require.NoError(t, err)
			tree, _, err := sessiontree.Restore(ctx, sessiontree.Config{Root: t.TempDir(), Store: store, NoSync: true}, rc, repository.DefaultAgentID, id)
			require.NoError(t, err)
			got, _ := tree.Leaf()
			require.Equal(t, tc.want, got, "sessiontree")

			// The repository.
			repo, err := repository.New(store, owner, repository.Config{})
			require.NoError(t, err)
			s, err := repo.Open(ctx, id)
			require.NoError(t, err)
			require.Equal(t, tc.want, s.Head(), "repository")

			// transcript tree.
			var out, errOut bytes.Buffer
			require.NoError(t, run(ctx, []string{"tree", "--store", "file://" + dir, "--ns", ns,
				"--agent", repository.DefaultAgentID, "--session", id}, nil, &out, &errOut), errOut.String())
			active := regexp.MustCompile(`(?m)^[ |]*@ (\S+) .*ACTIVE LEAF`).FindAllStringSubmatch(out.String(), -1)
			if tc.want == "" {
				require.Empty(t, active, out.String())
			} else {
				require.Len(t, active, 1, out.String())
				require.Equal(t, shortID(tc.want), active[0][1], "transcript tree")
			}
		})
	}
}
