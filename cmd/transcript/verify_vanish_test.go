package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// newOneSegmentWriter returns an in-memory bucket, a store on it, a function
// that appends one entry as one segment of session acme/coder/s1, and that
// session.
func newOneSegmentWriter(t *testing.T) (*membucket.Bucket, *transcript.Store, func(raw string), transcript.TranscriptRef) {
	t.Helper()
	inner := membucket.New()
	writer, err := transcript.New(transcript.Config{Bucket: inner})
	require.NoError(t, err)
	t.Cleanup(func() { writer.Close() })
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
	one := func(raw string) {
		_, err := writer.AppendSegment(t.Context(), ref, [][]byte{[]byte(raw)}, w)
		require.NoError(t, err)
	}
	return inner, writer, one, ref
}

// compactsAfterListing is a bucket that runs compact after a listing of a
// session's segments was handed out, times times: a compaction with no delete
// delay that merges and deletes what a reader has just listed. A check of a
// session lists its prefix once (its segments and what else lies there).
type compactsAfterListing struct {
	bucket.Bucket
	times   int
	compact func()
	mu      sync.Mutex
	done    int
}

func (c *compactsAfterListing) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if err := c.Bucket.List(ctx, opts, fn); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if opts.Delimited {
		return nil
	}
	if c.done < c.times {
		c.done++
		c.compact()
	}
	return nil
}

// TestVerify_SegmentsCompactedWhileRead: verify lists a session, then a
// compaction with --delete-delay 0 merges and deletes the listed segments
// before verify reads them. verify used to check what it could still read and
// report the session's header (or a parent) lost, a false alarm of data loss;
// it now checks the session anew from a new listing. A compaction that keeps
// deleting under every attempt is reported as such, never as a lost header.
func TestVerify_SegmentsCompactedWhileRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		times    int
		problems []string
	}{
		{"once", 1, nil},
		{"under every attempt", verifyAttempts, []string{"deleted while they were read, 3 times (a compaction is running)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			inner, writer, one, ref := newOneSegmentWriter(t)
			compact := func() {
				_, err := writer.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 3, DeleteDelay: transcript.DeleteAtOnce})
				require.NoError(t, err)
			}
			// The session's later entries compacted into a segment of level 1,
			// its header and first entries in three of level 0, which the
			// compaction after verify's listing merges and deletes: verify
			// then reads the level 1 segment alone.
			for i, parent := range []string{"e2", "e3", "e4"} {
				one(entryLine(fmt.Sprintf("e%d", i+3), parent))
			}
			compact()
			one(`{"type":"session","version":3,"id":"h1","timestamp":"2026-09-25T22:28:55.488Z","cwd":"/"}`)
			one(entryLine("e1", ""))
			one(entryLine("e2", "e1"))
			n := 5
			wrapped := &compactsAfterListing{Bucket: inner, times: tc.times, compact: func() {
				compact()
				for range 3 { // the next compaction has inputs to delete
					n++
					one(entryLine(fmt.Sprintf("e%d", n), fmt.Sprintf("e%d", n-1)))
				}
			}}
			reader, err := transcript.New(transcript.Config{Bucket: wrapped})
			require.NoError(t, err)
			defer reader.Close()
			c, err := checkSession(ctx, reader, ref)
			require.NoError(t, err)
			var got []string
			for _, p := range c.problems {
				got = append(got, p.Problem)
			}
			require.Len(t, got, len(tc.problems), "problems: %q", got)
			for i, want := range tc.problems {
				require.Contains(t, got[i], want)
			}
		})
	}
}

// countsLists is a bucket that counts the recursive listings sent through it.
type countsLists struct {
	bucket.Bucket
	mu    sync.Mutex
	lists int
}

func (c *countsLists) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if !opts.Delimited {
		c.mu.Lock()
		c.lists++
		c.mu.Unlock()
	}
	return c.Bucket.List(ctx, opts, fn)
}

// TestVerify_OneListingPerSession: the check of a session lists its prefix
// once, and still names what else lies there.
func TestVerify_OneListingPerSession(t *testing.T) {
	ctx := context.Background()
	inner, writer, one, ref := newOneSegmentWriter(t)
	for _, raw := range []string{`{"type":"session","version":3,"id":"h1","timestamp":"2026-09-25T22:28:55.488Z","cwd":"/"}`, entryLine("e1", ""), entryLine("e2", "e1")} {
		one(raw)
	}
	stray := writer.SessionPrefix(ref) + "notes.txt"
	require.NoError(t, inner.Put(ctx, stray, strings.NewReader("x"), 1, bucket.PutOptions{}))
	counted := &countsLists{Bucket: inner}
	reader, err := transcript.New(transcript.Config{Bucket: counted})
	require.NoError(t, err)
	defer reader.Close()
	c, err := checkSession(ctx, reader, ref)
	require.NoError(t, err)
	require.Equal(t, 1, counted.lists)
	require.Len(t, c.problems, 1, "%+v", c.problems)
	require.Contains(t, c.problems[0].Problem, "not a segment")
	require.Equal(t, 2, c.entries)
}
