package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	cmdcli "github.com/transcriptstore/transcript/internal/cli"
	"github.com/transcriptstore/transcript/transcript"
)

// TestRestore_PiLayoutFileWrittenMeanwhile: restore --layout pi checks a local
// file when it reads its session, but moves the files into place only once
// every session is read, minutes later in a large restore. A file Pi wrote to
// meanwhile (Pi running on the machine restored to) holds entries the check
// never saw: it is left as it is and the session fails, instead of being
// replaced, which dropped what Pi wrote; with --force it is replaced. A file
// nobody touched is replaced as before.
func TestRestore_PiLayoutFileWrittenMeanwhile(t *testing.T) {
	store := fileBackend().fresh(t)
	ok(t, "import", "--store", store, "--agent", "coder", "--session", "s1", fixtureV3)
	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "coder", SessionID: "s1"}
	want, err := os.ReadFile(fixtureV3)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(string(want), "\n"), "\n")
	older := strings.Join(lines[:len(lines)-1], "") // the bucket holds one entry more
	piWrites := entryLine("written-meanwhile", "") + "\n"

	for _, tt := range []struct {
		name      string
		meanwhile bool
		force     bool
		want      string
	}{
		{name: "untouched", want: string(want)},
		{name: "written meanwhile", meanwhile: true, want: older + piWrites},
		{name: "written meanwhile, --force", meanwhile: true, force: true, want: string(want)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			dest := filepath.Join(out, "--home-daniel-co-pilish--", "2026-09-25T22-28-55-488Z_"+fixtureV3ID+".jsonl")
			require.NoError(t, os.MkdirAll(filepath.Dir(dest), 0o755))
			require.NoError(t, os.WriteFile(dest, []byte(older), 0o644))
			s, err := cmdcli.OpenStore(t.Context(), store, ref.Namespace, cmdcli.ReadOnly)
			require.NoError(t, err)
			defer s.Close()
			p := &piRestore{out: out, scratch: t.TempDir(), force: tt.force}
			outcome, _, _, err := p.prepare(t.Context(), newSessionReader(s, ref), ref)
			require.NoError(t, err)
			require.Equal(t, outcomeDeferred, outcome)
			if tt.meanwhile {
				f, err := os.OpenFile(dest, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteString(piWrites)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			claims := p.place()
			require.Len(t, claims, 1)
			if tt.meanwhile && !tt.force {
				require.ErrorIs(t, claims[0].err, errLocalChanged)
			} else {
				require.NoError(t, claims[0].err)
				require.Equal(t, outcomeRestored, claims[0].outcome)
			}
			got, err := os.ReadFile(dest)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}
}
