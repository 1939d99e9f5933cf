package mirror_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestLegacyKeys(t *testing.T) {
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	c, l := mirror.LegacyKeys("/p/", ref)
	require.Equal(t, "p/default/agents/a/sessions/s.jsonl", c)
	require.Equal(t, "p/default/agents/a/sessions/s.log.jsonl", l)
	c, _ = mirror.LegacyKeys("", transcript.TranscriptRef{Namespace: "n", AgentID: "a", SessionID: "s"})
	require.Equal(t, "n/agents/a/sessions/s.jsonl", c)
}

func getObject(t *testing.T, b bucket.Bucket, key string) string {
	t.Helper()
	rc, _, err := b.Get(context.Background(), key)
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(data)
}

// noReplace hides the Replacer of a bucket.
type noReplace struct{ bucket.Bucket }

func TestLegacy_Upload(t *testing.T) {
	for name, inner := range map[string]func() bucket.Bucket{
		"replacer":       func() bucket.Bucket { return membucket.New() },
		"delete and put": func() bucket.Bucket { return noReplace{membucket.New()} },
	} {
		t.Run(name, func(t *testing.T) {
			fb := faultbucket.Wrap(inner())
			l := &mirror.Legacy{Bucket: fb, Prefix: "legacy"}
			ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
			files := sessiontree.FilesOf(t.TempDir(), ref)
			require.NoError(t, os.MkdirAll(filepath.Dir(files.Context), 0o755))
			ck, lk := mirror.LegacyKeys("legacy", ref)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var content string
			var uploaded int64
			for i := range 3 {
				content += string(entry(string(rune('a'+i)), "", i, "x")) + "\n"
				require.NoError(t, os.WriteFile(files.Context, []byte("ctx "+content), 0o644))
				require.NoError(t, os.WriteFile(files.Log, []byte(content), 0o644))
				require.NoError(t, l.Upload(ctx, sessiontree.Batch{Ref: ref, Files: files}))
				uploaded += int64(len("ctx ") + 2*len(content))
				require.Equal(t, "ctx "+content, getObject(t, fb, ck), "last writer wins")
				require.Equal(t, content, getObject(t, fb, lk))
			}
			require.NoError(t, l.AwaitQuiescence(ctx))
			require.NoError(t, l.Close(ctx))
			c := fb.Counts()
			require.Equal(t, uploaded, c.BytesUp, "every flush uploads both whole files")
		})
	}
}

func TestLegacy_Errors(t *testing.T) {
	ctx := context.Background()
	require.Error(t, (&mirror.Legacy{}).Upload(ctx, sessiontree.Batch{}))
	l := &mirror.Legacy{Bucket: membucket.New()}
	require.ErrorIs(t, l.Upload(ctx, sessiontree.Batch{Ref: transcript.TranscriptRef{AgentID: "a/b", SessionID: "s"}}), transcript.ErrInvalidRef)
	err := l.Upload(ctx, sessiontree.Batch{Ref: transcript.TranscriptRef{AgentID: "a", SessionID: "s"}, Files: sessiontree.Files{Log: filepath.Join(t.TempDir(), "missing")}})
	require.ErrorIs(t, err, os.ErrNotExist)
}
