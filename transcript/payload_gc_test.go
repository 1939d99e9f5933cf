package transcript_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// segmentPutHook is a bucket that calls before (once, when set) ahead of the first
// PUT of a level-0 segment, and fails every such PUT while fail is set: a writer
// that stops between its payload PUTs and its segment PUT.
type segmentPutHook struct {
	bucket.Bucket
	mu     sync.Mutex
	before func()
	fail   bool
}

var errKilled = errors.New("writer killed before its segment PUT")

func (b *segmentPutHook) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if strings.Contains(key, "/L0/") {
		b.mu.Lock()
		before, fail := b.before, b.fail
		b.before = nil
		b.mu.Unlock()
		if before != nil {
			before()
		}
		if fail {
			return errKilled
		}
	}
	return b.Bucket.Put(ctx, key, r, size, opts)
}

// gcStore returns a store over b whose payload garbage collection needs no wait.
func gcStore(t *testing.T, b bucket.Bucket) *transcript.Store {
	s := newStore(t, b, transcript.Config{PayloadThreshold: testThreshold})
	transcript.SetPayloadFloor(s, 0)
	return s
}

var gcNow = transcript.PayloadGCOptions{DeleteDelay: transcript.DeleteAtOnce}

// TestPayloadGC_DeletesOnlyUnreferenced: a payload of a deleted session is marked
// by one run and deleted by the next; a payload another session still references
// stays; a dry run changes nothing; the surviving session reads byte for byte.
func TestPayloadGC_DeletesOnlyUnreferenced(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := newBucket(t)
			s := gcStore(t, b)
			w := newWriter(t, "w1")
			gone, kept := imageData(10, 2*testThreshold), imageData(11, 2*testThreshold)
			r2 := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: "other", SessionID: "s2"}
			_, err := s.AppendSegment(ctx, ref, [][]byte{imageEntry("a", "", gone), imageEntry("b", "a", kept)}, w)
			require.NoError(t, err)
			want2 := [][]byte{imageEntry("x", "", kept)}
			_, err = s.AppendSegment(ctx, r2, want2, w)
			require.NoError(t, err)

			res, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, transcript.PayloadGCResult{Payloads: 2, Bytes: res.Bytes, Segments: 2, Referenced: 2}, res)

			require.NoError(t, s.Delete(ctx, ref))
			dry, err := s.CollectPayloads(ctx, ref.Namespace, transcript.PayloadGCOptions{DeleteDelay: transcript.DeleteAtOnce, DryRun: true})
			require.NoError(t, err)
			require.Equal(t, 1, dry.Marked)
			res, err = s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 1, res.Marked, "first run: marked")
			require.Equal(t, 0, res.Deleted)
			require.ElementsMatch(t, []string{hashHex(gone), hashHex(kept)}, payloadKeys(t, b, "", ref.Namespace))
			dry, err = s.CollectPayloads(ctx, ref.Namespace, transcript.PayloadGCOptions{DeleteDelay: transcript.DeleteAtOnce, DryRun: true})
			require.NoError(t, err)
			require.Equal(t, 1, dry.Deleted)
			require.Len(t, payloadKeys(t, b, "", ref.Namespace), 2, "a dry run deletes nothing")

			res, err = s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 1, res.Deleted, "second run: deleted")
			require.Equal(t, []string{hashHex(kept)}, payloadKeys(t, b, "", ref.Namespace))
			requireNoPayloadMarks(t, b, ref.Namespace)
			requireEveryRead(t, s, r2, want2)

			// With the default delay a fresh mark waits.
			require.NoError(t, s.Delete(ctx, r2))
			res, err = s.CollectPayloads(ctx, ref.Namespace, transcript.PayloadGCOptions{})
			require.NoError(t, err)
			require.Equal(t, 1, res.Marked)
			res, err = s.CollectPayloads(ctx, ref.Namespace, transcript.PayloadGCOptions{})
			require.NoError(t, err)
			require.Equal(t, 1, res.Pending)
			require.Len(t, payloadKeys(t, b, "", ref.Namespace), 1)
		})
	}
}

// requireNoPayloadMarks checks that namespace ns holds no payload deletion mark.
func requireNoPayloadMarks(t *testing.T, b bucket.Bucket, ns string) {
	t.Helper()
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{Prefix: ns + "/payloads/gc/"}, func(oi bucket.ObjectInfo) error {
		return errors.New("a mark is left: " + oi.Key)
	}))
}

// TestPayloadGC_SegmentWrittenDuringTheDelaySurvives: the collector marks a
// payload a writer has just stored but whose segment is not stored yet (the
// writer checked for a mark before there was one); the segment lands during the
// delete delay; the next run finds it and keeps the payload (and drops its mark).
func TestPayloadGC_SegmentWrittenDuringTheDelaySurvives(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			hook := &segmentPutHook{Bucket: newBucket(t)}
			s := gcStore(t, hook)
			img := imageData(12, 2*testThreshold)
			hook.before = func() {
				res, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
				require.NoError(t, err)
				require.Equal(t, 1, res.Marked, "the payload is there, its segment not yet")
			}
			want := [][]byte{entry("a", ""), imageEntry("b", "a", img)}
			_, err := s.AppendSegment(ctx, ref, want, newWriter(t, "w1"))
			require.NoError(t, err)
			res, err := s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 0, res.Deleted)
			require.Equal(t, 1, res.Unmarked)
			requireNoPayloadMarks(t, hook, ref.Namespace)
			requireEveryRead(t, s, ref, want)

			// Marked now, a writer keeps the payload inline: no new reference to it.
			require.NoError(t, s.Delete(ctx, ref))
			res, err = s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 1, res.Marked)
			_, err = s.AppendSegment(ctx, ref, want, newWriter(t, "w2"))
			require.NoError(t, err)
			stored, err := s.Stored().ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Empty(t, stored.Entries[1].Refs, "a marked payload is written inline")
			res, err = s.CollectPayloads(ctx, ref.Namespace, gcNow)
			require.NoError(t, err)
			require.Equal(t, 1, res.Deleted)
			requireEveryRead(t, s, ref, want)
		})
	}
}

// TestPayload_CrashBetweenPayloadAndSegment: a writer stops after storing its
// payloads and before its segment. Nothing acknowledged is lost, the retry (a new
// process: a new store) stores the same segment and reads byte for byte; a payload
// whose segment never comes is dangling until the collector deletes it.
func TestPayload_CrashBetweenPayloadAndSegment(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			inner := newBucket(t)
			hook := &segmentPutHook{Bucket: inner, fail: true}
			s := gcStore(t, hook)
			img, lost := imageData(13, 2*testThreshold), imageData(14, 2*testThreshold)
			want := [][]byte{entry("a", ""), imageEntry("b", "a", img)}
			obj, err := s.PrepareSegment(ref, want, newWriter(t, "w1"))
			require.NoError(t, err)
			require.ErrorIs(t, s.PutSegment(ctx, obj.Info.Key, obj.Data), errKilled)
			_, err = s.AppendSegment(ctx, ref, [][]byte{imageEntry("z", "", lost)}, newWriter(t, "w2"))
			require.ErrorIs(t, err, errKilled)
			require.ElementsMatch(t, []string{hashHex(img), hashHex(lost)}, payloadKeys(t, inner, "", ref.Namespace))

			// The outbox retries the prepared segment after a restart; the other
			// batch was never acknowledged and is not retried.
			again := gcStore(t, inner)
			require.NoError(t, again.PutSegment(ctx, obj.Info.Key, obj.Data))
			requireEveryRead(t, again, ref, want)
			for range 2 {
				_, err := again.CollectPayloads(ctx, ref.Namespace, gcNow)
				require.NoError(t, err)
			}
			require.Equal(t, []string{hashHex(img)}, payloadKeys(t, inner, "", ref.Namespace), "the dangling payload is collected")
			requireEveryRead(t, again, ref, want)
		})
	}
}
