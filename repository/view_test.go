package repository_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// The read view passes every key that is not a hidden segment through with every
// capability of its bucket, strict mode's conditional writes included: it is a
// conforming bucket over each backend.
func TestViewBucket_Conformance(t *testing.T) {
	hideAll := func(transcript.SegmentInfo) bool { return false }
	t.Run("mem", func(t *testing.T) {
		buckettest.Run(t, func(t *testing.T) bucket.Bucket {
			return repository.NewViewBucket(membucket.New(), "p", hideAll)
		})
	})
	t.Run("file", func(t *testing.T) {
		buckettest.RunWithOptions(t, buckettest.Options{ChecksumNotStored: true, FileDirConflict: true}, func(t *testing.T) bucket.Bucket {
			b, err := filebucket.New(t.TempDir())
			require.NoError(t, err)
			return repository.NewViewBucket(b, "p", hideAll)
		})
	})
}

// A hidden segment is missing for every read: Get, GetRange, GetWithETag, Stat
// and List; a kept one is there.
func TestViewBucket_HidesEveryRead(t *testing.T) {
	ctx := t.Context()
	mem := membucket.New()
	store, err := transcript.New(transcript.Config{Bucket: mem, Prefix: "p"})
	require.NoError(t, err)
	w, err := transcript.NewWriter("w")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "s"}
	hidden, err := store.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"e1","parentId":null}`)}, w)
	require.NoError(t, err)
	kept, err := store.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"e2","parentId":"e1"}`)}, w)
	require.NoError(t, err)
	v := repository.NewViewBucket(mem, "p", func(si transcript.SegmentInfo) bool { return si.Key != hidden.Key })

	reads := []struct {
		name string
		read func(key string) error
	}{
		{"Get", func(key string) error {
			rc, _, err := v.Get(ctx, key)
			if err == nil {
				rc.Close()
			}
			return err
		}},
		{"GetRange", func(key string) error { _, err := v.GetRange(ctx, key, 0, 8); return err }},
		{"GetWithETag", func(key string) error { _, _, err := v.GetWithETag(ctx, key); return err }},
		{"Stat", func(key string) error { _, err := v.Stat(ctx, key); return err }},
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			require.ErrorIs(t, r.read(hidden.Key), bucket.ErrNotFound)
			require.NoError(t, r.read(kept.Key))
		})
	}
	var listed []string
	require.NoError(t, v.List(ctx, bucket.ListOptions{Prefix: "p/"}, func(oi bucket.ObjectInfo) error {
		listed = append(listed, oi.Key)
		return nil
	}))
	require.Equal(t, []string{kept.Key}, listed)
}
