package transcript_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// withFolders lists, besides its bucket's objects, the "folder" objects of keys
// (zero-byte keys ending in "/", which S3 consoles make and the store's own
// buckets refuse to write).
type withFolders struct {
	bucket.Bucket
	folders []string
}

func (b withFolders) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	for _, k := range b.folders {
		if strings.HasPrefix(k, opts.Prefix) && !opts.Delimited {
			if err := fn(bucket.ObjectInfo{Key: k}); err != nil {
				return err
			}
		}
	}
	return b.Bucket.List(ctx, opts, fn)
}

func TestHoldsObjects(t *testing.T) {
	ctx := context.Background()
	mem := membucket.New()
	b := withFolders{Bucket: mem, folders: []string{"default/a/folders/", "default/a/folders/L0/", "default/a/stray/", "default/a/s/"}}
	s := newStore(t, b, transcript.Config{})
	ref := func(id string) transcript.TranscriptRef { return transcript.TranscriptRef{AgentID: "a", SessionID: id} }
	w, err := transcript.NewWriter("w")
	require.NoError(t, err)
	_, err = s.AppendSegments(ctx, ref("s"), [][]byte{[]byte(`{"type":"custom","id":"e1","parentId":null}`)}, w)
	require.NoError(t, err)
	require.NoError(t, mem.Put(ctx, "default/a/stray/notes.txt", strings.NewReader("x"), 1, bucket.PutOptions{}))
	// The cached summary of a session deleted while a list derived it.
	require.NoError(t, mem.Put(ctx, "default/a/gone/"+transcript.SummaryName, strings.NewReader("{}"), 2, bucket.PutOptions{}))
	require.NoError(t, s.WriteSummary(ctx, ref("s"), transcript.CachedSummary{Tag: "t"}))

	for _, tt := range []struct {
		session string
		want    bool
	}{
		{"s", true},        // segments (and a folder, and a summary)
		{"gone", false},    // a summary alone: not a session
		{"stray", true},    // a stray object (verify names it)
		{"folders", false}, // folders only: not a session
		{"none", false},    // nothing at all
	} {
		got, err := s.HoldsObjects(ctx, ref(tt.session))
		require.NoError(t, err)
		require.Equal(t, tt.want, got, tt.session)
	}
	require.True(t, transcript.IsDirectoryMarker("default/a/folders/"))
	require.False(t, transcript.IsDirectoryMarker("default/a/s/L0/x.jsonl.zst"))

	bound := newStore(t, b, transcript.Config{Namespace: "other"})
	got, err := bound.HoldsObjects(ctx, ref("s"))
	require.NoError(t, err)
	require.False(t, got, "a store bound to another namespace sees nothing")
}
