package followmirror_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/followmirror"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// counter counts the reads, HEADs and listings of its bucket.
type counter struct {
	bucket.Bucket
	gets, stats, lists atomic.Int64
}

func (c *counter) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	c.gets.Add(1)
	return c.Bucket.Get(ctx, key)
}

func (c *counter) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	c.stats.Add(1)
	return c.Bucket.Stat(ctx, key)
}

func (c *counter) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	c.lists.Add(1)
	return c.Bucket.List(ctx, opts, fn)
}

// requests returns the counts of reads, HEADs and listings so far.
func (c *counter) requests() [3]int64 { return [3]int64{c.gets.Load(), c.stats.Load(), c.lists.Load()} }

// TestUploader_SessionExistsWantsTheHeader: a session the store holds only
// later entries of, without its header (what an outbox uploads after the
// store lost the session's start under it: the bucket deleted and created
// again while those lines waited), is lost for the follower, which then
// uploads the header and what the session lacks; a session whose header the
// store holds, compacted or not, is held. Once the segment holding the header
// is found, asking again costs one HEAD of it.
func TestUploader_SessionExistsWantsTheHeader(t *testing.T) {
	header := []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-02T03:04:05.678Z","cwd":"/w"}`)
	entry := func(id, parent string) []byte {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		return []byte(`{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":"hi"}}`)
	}
	ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "a", SessionID: "s"}
	tests := []struct {
		name string
		// segments are stored in order; compact compacts them after.
		segments [][][]byte
		compact  bool
		want     bool
	}{
		{"nothing", nil, false, false},
		{"header and entries", [][][]byte{{header, entry("e1", "")}, {entry("e2", "e1")}}, false, true},
		{"entries without a header", [][][]byte{{entry("e2", "e1")}, {entry("e3", "e2")}}, false, false},
		{"header compacted with later segments", [][][]byte{{header, entry("e1", "")}, {entry("e2", "e1")}, {entry("e3", "e2")}}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			b := &counter{Bucket: membucket.New()}
			store, err := transcript.New(transcript.Config{Bucket: b, Prefix: "p"})
			require.NoError(t, err)
			defer store.Close()
			u, err := followmirror.Open(store, followmirror.Config{Writer: transcript.NewRandomWriter(), OutboxDir: t.TempDir()})
			require.NoError(t, err)
			defer func() { require.NoError(t, u.Close(ctx)) }()
			w := transcript.NewRandomWriter()
			for _, seg := range tt.segments {
				_, err := store.AppendSegments(ctx, ref, seg, w)
				require.NoError(t, err)
			}
			got, err := u.SessionExists(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			if tt.compact {
				_, err := store.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
				require.NoError(t, err)
				got, err := u.SessionExists(ctx, ref)
				require.NoError(t, err)
				require.Equal(t, tt.want, got, "after a compaction")
			}
			if !tt.want {
				return
			}
			before := b.requests()
			got, err = u.SessionExists(ctx, ref)
			require.NoError(t, err)
			require.True(t, got)
			require.Equal(t, [3]int64{before[0], before[1] + 1, before[2]}, b.requests(),
				"one HEAD of the segment found holding the header is enough: no read, no listing")

			// The bucket emptied under the follower, and a later segment
			// uploaded to it: lost, though the header's segment was seen.
			require.NoError(t, store.Delete(ctx, ref))
			_, err = store.AppendSegments(ctx, ref, [][]byte{entry("e9", "e3")}, w)
			require.NoError(t, err)
			got, err = u.SessionExists(ctx, ref)
			require.NoError(t, err)
			require.False(t, got, "the header's segment is gone")
		})
	}
}
