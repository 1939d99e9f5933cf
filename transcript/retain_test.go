package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// aheadBucket is a bucket whose clock can be moved ahead of its inner bucket's:
// an object reports the LastModified the inner bucket gave it plus how far the
// clock was ahead when it was written, and Now the inner clock plus how far it is
// ahead now, so moving the clock ages every object stored before, on any backend,
// without sleeping. It can also run a hook before the next batch delete.
type aheadBucket struct {
	bucket.Bucket
	ahead       atomic.Int64
	written     sync.Map // key -> how far the clock was ahead when it was written
	beforeBatch atomic.Pointer[func(keys []string) error]
}

func (b *aheadBucket) Now(ctx context.Context) (time.Time, error) {
	t, err := b.Bucket.Now(ctx)
	return t.Add(time.Duration(b.ahead.Load())), err
}

func (b *aheadBucket) stamp(key string, err error) error {
	if err == nil {
		b.written.Store(key, time.Duration(b.ahead.Load()))
	}
	return err
}

func (b *aheadBucket) shift(oi bucket.ObjectInfo) bucket.ObjectInfo {
	if d, ok := b.written.Load(oi.Key); ok && !oi.ModTime.IsZero() {
		oi.ModTime = oi.ModTime.Add(d.(time.Duration))
	}
	return oi
}

func (b *aheadBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	return b.stamp(key, b.Bucket.Put(ctx, key, r, size, opts))
}

func (b *aheadBucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	return b.stamp(key, b.Bucket.Replace(ctx, key, r, size, opts))
}

func (b *aheadBucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	etag, err := b.Bucket.PutIf(ctx, key, r, size, cond)
	return etag, b.stamp(key, err)
}

func (b *aheadBucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	return b.Bucket.List(ctx, opts, func(oi bucket.ObjectInfo) error { return fn(b.shift(oi)) })
}

func (b *aheadBucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	oi, err := b.Bucket.Stat(ctx, key)
	return b.shift(oi), err
}

func (b *aheadBucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	rc, oi, err := b.Bucket.Get(ctx, key)
	return rc, b.shift(oi), err
}

func (b *aheadBucket) DeleteBatch(ctx context.Context, keys []string) error {
	if f := b.beforeBatch.Swap(nil); f != nil {
		if err := (*f)(keys); err != nil {
			return err
		}
	}
	return b.Bucket.DeleteBatch(ctx, keys)
}

// advance moves the bucket's clock d ahead.
func (b *aheadBucket) advance(d time.Duration) { b.ahead.Add(int64(d)) }

// onNextBatch runs f before the next batch delete; an error from f fails it.
func (b *aheadBucket) onNextBatch(f func(keys []string) error) { b.beforeBatch.Store(&f) }

// retained runs Retain over namespace acme and returns each session's result by
// "agent/session"; it fails the test on any error.
func retained(t *testing.T, s *transcript.Store, r transcript.Retention, opts transcript.RetentionOptions) map[string]transcript.RetentionResult {
	t.Helper()
	var mu sync.Mutex
	out := map[string]transcript.RetentionResult{}
	err := s.Retain(context.Background(), "acme", "", &r, opts, func(res transcript.RetentionResult, err error) {
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, err, res.Ref.String())
		out[res.Ref.AgentID+"/"+res.Ref.SessionID] = res
	})
	require.NoError(t, err)
	return out
}

// actions returns each session's action by name.
func actions(res map[string]transcript.RetentionResult) map[string]string {
	out := map[string]string{}
	for k, r := range res {
		out[k] = r.Action.String()
	}
	return out
}

// acmeRef returns the ref of session id of agent in namespace acme.
func acmeRef(agent, id string) transcript.TranscriptRef {
	return transcript.TranscriptRef{Namespace: "acme", AgentID: agent, SessionID: id}
}

// markExists reports whether ref has a retention mark.
func markExists(t *testing.T, s *transcript.Store, r transcript.TranscriptRef) bool {
	t.Helper()
	_, err := s.Bucket().Stat(context.Background(), s.SessionPrefix(r)+transcript.RetentionMarkName)
	if errors.Is(err, bucket.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// sessionKeys lists every key under ref's prefix.
func sessionKeys(t *testing.T, s *transcript.Store, r transcript.TranscriptRef) []string {
	t.Helper()
	var keys []string
	require.NoError(t, s.Bucket().List(context.Background(), bucket.ListOptions{Prefix: s.SessionPrefix(r)}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	return keys
}

// entryCount returns how many entries ref holds.
func entryCount(t *testing.T, s *transcript.Store, r transcript.TranscriptRef) int {
	t.Helper()
	res, err := s.ReadAll(context.Background(), r)
	require.NoError(t, err)
	return len(res.Entries)
}

// newAheadStore returns a store on an aheadBucket around inner, the bucket, and a writer.
func newAheadStore(t *testing.T, inner bucket.Bucket) (*aheadBucket, *transcript.Store, *transcript.Writer) {
	t.Helper()
	b := &aheadBucket{Bucket: inner}
	return b, newStore(t, b, transcript.Config{}), newWriter(t, "w")
}

func maxAge(d time.Duration) transcript.RetentionPolicy { return transcript.RetentionPolicy{MaxAge: d} }

// TestRetain_MaxAge: on every backend, a session whose last update is older than
// its agent's max age (on the bucket's clock) is marked, waits out the delete
// delay, and is deleted whole (compacted segments, a strict head, marks, the
// cached summary); the
// sessions of an agent with a longer max age stay as they were.
func TestRetain_MaxAge(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := &aheadBucket{Bucket: newBucket(t)}
			s := newStore(t, b, transcript.Config{Prefix: "p"})
			w := newWriter(t, "w")
			appendChain(t, s, acmeRef("short", "s1"), w, "a", "", 5)
			_, err := s.Compact(ctx, acmeRef("short", "s1"), transcript.CompactOptions{MinSegments: 2, DeleteDelay: time.Hour})
			require.NoError(t, err) // an L1 and a deletion mark, with the inputs
			// A list's cached summary goes with the session too.
			require.NoError(t, s.WriteSummary(ctx, acmeRef("short", "s1"), transcript.CachedSummary{Tag: "listed"}))
			_, _, err = s.CreateSession(ctx, acmeRef("short", "strict"), [][]byte{entry("h", "")}, w, transcript.CreateOptions{Strict: true, Head: "h"})
			require.NoError(t, err)
			appendChain(t, s, acmeRef("long", "s1"), w, "c", "", 2)
			r := transcript.Retention{Rules: []transcript.RetentionRule{
				{Namespace: "acme", Agent: "short", Policy: maxAge(30 * day)},
				{Policy: maxAge(60 * day)},
			}}
			opts := transcript.RetentionOptions{DeleteDelay: 10 * time.Minute, Parallel: 4}

			require.Equal(t, map[string]string{"short/s1": "kept", "short/strict": "kept", "long/s1": "kept"}, actions(retained(t, s, r, opts)))
			b.advance(40 * day)
			res := retained(t, s, r, opts)
			require.Equal(t, map[string]string{"short/s1": "marked", "short/strict": "marked", "long/s1": "kept"}, actions(res))
			require.Contains(t, res["short/s1"].Reason, "max-age 30d: last update 40d ago")
			require.True(t, markExists(t, s, acmeRef("short", "s1")))
			require.Equal(t, 5, entryCount(t, s, acmeRef("short", "s1")), "a marked session reads as before")

			b.advance(9 * time.Minute)
			require.Equal(t, "pending", retained(t, s, r, opts)["short/s1"].Action.String())
			b.advance(2 * time.Minute)
			res = retained(t, s, r, opts)
			require.Equal(t, map[string]string{"short/s1": "deleted", "short/strict": "deleted", "long/s1": "kept"}, actions(res))
			require.Positive(t, res["short/s1"].Bytes)
			require.Empty(t, sessionKeys(t, s, acmeRef("short", "s1")), "every object of the session is gone, its mark last")
			require.Empty(t, sessionKeys(t, s, acmeRef("short", "strict")))
			for _, id := range []string{"s1", "strict"} {
				exists, err := s.SessionExists(ctx, acmeRef("short", id))
				require.NoError(t, err)
				require.False(t, exists)
			}
			require.Equal(t, 2, entryCount(t, s, acmeRef("long", "s1")))
			require.Empty(t, retained(t, s, r, opts)["short/s1"], "a deleted session is not visited again")
		})
	}
}

// TestRetain_KeepLast: on every backend, each agent keeps its newest sessions by
// last update, whatever their ids; the others are deleted.
func TestRetain_KeepLast(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			_, s, w := newAheadStore(t, newBucket(t))
			// Written oldest first with ids falling, so that backends whose times
			// tie (whole seconds) rank them the same way (ties go by id).
			for _, id := range []string{"s5", "s4", "s3", "s2", "s1"} {
				appendChain(t, s, acmeRef("coder", id), w, id, "", 2)
			}
			for _, id := range []string{"b3", "b2", "b1"} {
				appendChain(t, s, acmeRef("bot", id), w, id, "", 1)
			}
			r := transcript.Retention{Rules: []transcript.RetentionRule{{Namespace: "acme", Policy: transcript.RetentionPolicy{KeepLast: 2}}}}
			res := retained(t, s, r, transcript.RetentionOptions{DeleteDelay: transcript.DeleteAtOnce})
			require.Equal(t, map[string]string{
				"coder/s1": "kept", "coder/s2": "kept", "coder/s3": "deleted", "coder/s4": "deleted", "coder/s5": "deleted",
				"bot/b1": "kept", "bot/b2": "kept", "bot/b3": "deleted",
			}, actions(res))
			require.Equal(t, "keep-last 2: number 5 by last write", res["coder/s5"].Reason)
			for key, r := range res {
				// Objects, not SessionExists: these sessions have no Pi header.
				require.Equal(t, r.Action == transcript.RetentionKept, len(sessionKeys(t, s, r.Ref)) > 0, key)
			}
		})
	}
}

// TestRetain_Hold: on every backend, a hold wins over every policy: a held session
// is never marked, a hold added after the mark drops it at the next run, and
// sessions a wildcard hold names are kept too.
func TestRetain_Hold(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			b, s, w := newAheadStore(t, newBucket(t))
			for _, r := range []transcript.TranscriptRef{acmeRef("coder", "s1"), acmeRef("coder", "s2"), acmeRef("legal", "x")} {
				appendChain(t, s, r, w, r.AgentID+r.SessionID, "", 2)
			}
			r := transcript.Retention{
				Rules: []transcript.RetentionRule{{Policy: maxAge(30 * day)}},
				Holds: []transcript.Hold{{Namespace: "acme", Agent: "coder", Session: "s2"}, {Namespace: "acme", Agent: "legal", Session: "*"}},
			}
			opts := transcript.RetentionOptions{DeleteDelay: 10 * time.Minute}
			b.advance(40 * day)
			require.Equal(t, map[string]string{"coder/s1": "marked", "coder/s2": "held", "legal/x": "held"}, actions(retained(t, s, r, opts)))
			require.False(t, markExists(t, s, acmeRef("coder", "s2")))
			require.False(t, markExists(t, s, acmeRef("legal", "x")))

			r.Holds = append(r.Holds, transcript.Hold{Namespace: "acme", Agent: "coder", Session: "s1"})
			b.advance(11 * time.Minute)
			require.Equal(t, map[string]string{"coder/s1": "held", "coder/s2": "held", "legal/x": "held"}, actions(retained(t, s, r, opts)))
			require.False(t, markExists(t, s, acmeRef("coder", "s1")), "the hold drops the mark")
			require.Equal(t, 2, entryCount(t, s, acmeRef("coder", "s1")))

			r.Holds = nil
			require.Equal(t, map[string]string{"coder/s1": "marked", "coder/s2": "marked", "legal/x": "marked"}, actions(retained(t, s, r, opts)),
				"released from the hold, a session waits out a whole delay again")
		})
	}
}

// TestRetain_WrittenDuringDelaySurvives: on every backend, a session that gets a
// segment after it was marked is not deleted when the delay has passed: the mark
// is dropped and the survival reported with the segment; a compaction during the
// delay is not a write.
func TestRetain_WrittenDuringDelaySurvives(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b, s, w := newAheadStore(t, newBucket(t))
			ids := appendChain(t, s, acmeRef("coder", "s1"), w, "a", "", 2)
			appendChain(t, s, acmeRef("coder", "s2"), w, "b", "", 4)
			r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: maxAge(30 * day)}}}
			opts := transcript.RetentionOptions{DeleteDelay: 10 * time.Minute}
			b.advance(40 * day)
			require.Equal(t, map[string]string{"coder/s1": "marked", "coder/s2": "marked"}, actions(retained(t, s, r, opts)))

			late, err := s.AppendSegment(ctx, acmeRef("coder", "s1"), [][]byte{entry("a-late", ids[1])}, w)
			require.NoError(t, err)
			c, err := s.Compact(ctx, acmeRef("coder", "s2"), transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.Len(t, c.Compactions, 1)

			b.advance(11 * time.Minute)
			res := retained(t, s, r, opts)
			require.Equal(t, map[string]string{"coder/s1": "survived", "coder/s2": "deleted"}, actions(res))
			require.Equal(t, []string{late.Key}, res["coder/s1"].Unseen)
			require.False(t, markExists(t, s, acmeRef("coder", "s1")))
			require.Equal(t, 3, entryCount(t, s, acmeRef("coder", "s1")), "nothing of the session was deleted")
			require.Empty(t, sessionKeys(t, s, acmeRef("coder", "s2")))
		})
	}
}

// TestRetain_DryRunDeletesNothing: on every backend, a dry run reports what it
// would mark and delete (and what would survive) and writes and deletes nothing.
func TestRetain_DryRunDeletesNothing(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b, s, w := newAheadStore(t, newBucket(t))
			for _, id := range []string{"s1", "s2", "s3"} {
				appendChain(t, s, acmeRef("coder", id), w, id, "", 2)
			}
			r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: maxAge(30 * day)}}}
			dry := transcript.RetentionOptions{DeleteDelay: 10 * time.Minute, DryRun: true}
			b.advance(40 * day)
			before := allKeys(t, b)
			require.Equal(t, map[string]string{"coder/s1": "marked", "coder/s2": "marked", "coder/s3": "marked"}, actions(retained(t, s, r, dry)))
			require.Equal(t, before, allKeys(t, b), "no mark written")
			atOnce := dry
			atOnce.DeleteDelay = transcript.DeleteAtOnce
			res := retained(t, s, r, atOnce)
			require.Equal(t, map[string]string{"coder/s1": "deleted", "coder/s2": "deleted", "coder/s3": "deleted"}, actions(res))
			require.Equal(t, 2, res["coder/s1"].Objects)
			require.Equal(t, before, allKeys(t, b), "nothing deleted")

			retained(t, s, r, transcript.RetentionOptions{DeleteDelay: 10 * time.Minute})
			_, err := s.AppendSegment(ctx, acmeRef("coder", "s3"), [][]byte{entry("s3-late", "")}, w)
			require.NoError(t, err)
			b.advance(11 * time.Minute)
			before = allKeys(t, b)
			require.Equal(t, map[string]string{"coder/s1": "deleted", "coder/s2": "deleted", "coder/s3": "survived"}, actions(retained(t, s, r, dry)))
			require.Equal(t, before, allKeys(t, b), "no mark dropped, nothing deleted")
			for _, id := range []string{"s1", "s2"} {
				require.Equal(t, 2, entryCount(t, s, acmeRef("coder", id)))
			}
		})
	}
}

// TestRetain_LateWriteIsReported: on every backend, a segment that lands between
// the check at delete time and the deletes is not deleted: the run reports it,
// drops the mark, and the segment stays readable for a later run to decide.
func TestRetain_LateWriteIsReported(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b, s, w := newAheadStore(t, newBucket(t))
			chain := appendChain(t, s, acmeRef("coder", "s1"), w, "a", "", 3)
			var late transcript.SegmentInfo
			b.onNextBatch(func([]string) error {
				var err error
				late, err = s.AppendSegment(ctx, acmeRef("coder", "s1"), [][]byte{entry("a-late", chain[2])}, w)
				return err
			})
			r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: maxAge(30 * day)}}}
			b.advance(40 * day)
			res := retained(t, s, r, transcript.RetentionOptions{DeleteDelay: transcript.DeleteAtOnce})
			require.Equal(t, "late-write", res["coder/s1"].Action.String())
			require.Equal(t, []string{late.Key}, res["coder/s1"].Unseen)
			require.Equal(t, []string{late.Key}, sessionKeys(t, s, acmeRef("coder", "s1")), "the late segment alone remains, no mark")
			got, err := s.ReadAll(ctx, acmeRef("coder", "s1"))
			require.NoError(t, err)
			require.Equal(t, []string{"a-late"}, ids(got))
		})
	}
}

// TestRetain_StoppedDeletionFinishes: a deletion that fails part way (after the
// strict head, before the segments) leaves the mark, and the next run finishes it.
func TestRetain_StoppedDeletionFinishes(t *testing.T) {
	b, s, w := newAheadStore(t, testBackends()["mem"](t))
	ctx := context.Background()
	_, _, err := s.CreateSession(ctx, acmeRef("coder", "s1"), [][]byte{entry("h", "")}, w, transcript.CreateOptions{Strict: true, Head: "h"})
	require.NoError(t, err)
	appendChain(t, s, acmeRef("coder", "s1"), w, "a", "h", 2)
	r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: maxAge(30 * day)}}}
	opts := transcript.RetentionOptions{DeleteDelay: 10 * time.Minute}
	b.advance(40 * day)
	retained(t, s, r, opts)
	b.advance(11 * time.Minute)

	var batch []string
	b.onNextBatch(func(keys []string) error { batch = keys; return fmt.Errorf("stopped") })
	var got []error
	require.NoError(t, s.Retain(ctx, "acme", "", &r, opts, func(_ transcript.RetentionResult, err error) { got = append(got, err) }))
	require.Len(t, got, 1)
	require.ErrorContains(t, got[0], "stopped")
	keys := sessionKeys(t, s, acmeRef("coder", "s1"))
	require.NotContains(t, keys, s.SessionPrefix(acmeRef("coder", "s1"))+transcript.HeadName, "the head goes first")
	require.Len(t, batch, 3, "then the segments")
	require.Greater(t, batch[0], batch[1], "newest first")
	require.True(t, markExists(t, s, acmeRef("coder", "s1")))

	require.Equal(t, map[string]string{"coder/s1": "deleted"}, actions(retained(t, s, r, opts)))
	require.Empty(t, sessionKeys(t, s, acmeRef("coder", "s1")))
}

// TestRetain_ReleasedWhenNoLongerSelected: a marked session that no policy
// selects any more (here: keep-last raised) has its mark dropped, reported as
// released, not survived.
func TestRetain_ReleasedWhenNoLongerSelected(t *testing.T) {
	_, s, w := newAheadStore(t, testBackends()["mem"](t))
	appendChain(t, s, acmeRef("coder", "s2"), w, "b", "", 1)
	appendChain(t, s, acmeRef("coder", "s1"), w, "a", "", 1)
	r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
	require.Equal(t, map[string]string{"coder/s1": "kept", "coder/s2": "marked"}, actions(retained(t, s, r, transcript.RetentionOptions{})))
	r.Rules[0].Policy.KeepLast = 5
	res := retained(t, s, r, transcript.RetentionOptions{})
	require.Equal(t, map[string]string{"coder/s1": "kept", "coder/s2": "released"}, actions(res))
	require.Equal(t, "keep-last 1: number 2 by last write", res["coder/s2"].Reason, "the reason of the dropped mark")
	require.False(t, markExists(t, s, acmeRef("coder", "s2")))
}

// TestRetain_OwnAgent: a run that owns some agents neither lists nor touches the
// others' sessions.
func TestRetain_OwnAgent(t *testing.T) {
	b, s, w := newAheadStore(t, testBackends()["mem"](t))
	appendChain(t, s, acmeRef("mine", "s1"), w, "a", "", 1)
	appendChain(t, s, acmeRef("theirs", "s1"), w, "b", "", 1)
	r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: maxAge(day)}}}
	b.advance(2 * day)
	own := func(ns, agent string) bool { require.Equal(t, "acme", ns); return agent == "mine" }
	res := retained(t, s, r, transcript.RetentionOptions{DeleteDelay: transcript.DeleteAtOnce, OwnAgent: own})
	require.Equal(t, map[string]string{"mine/s1": "deleted"}, actions(res))
	require.Equal(t, 1, entryCount(t, s, acmeRef("theirs", "s1")))
}

// TestRetain_LastUpdateIsTheNewestSegment: on the directory backend, whose objects'
// times a test can set, a session's last update is its newest segment: one old
// segment beside a recent one keeps the session; a recent strict head or deletion
// mark does not.
func TestRetain_LastUpdateIsTheNewestSegment(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fb, err := filebucket.New(dir)
	require.NoError(t, err)
	s := newStore(t, fb, transcript.Config{})
	w := newWriter(t, "w")
	old := time.Now().Add(-40 * day)
	backdate := func(keys ...string) {
		for _, k := range keys {
			require.NoError(t, os.Chtimes(filepath.Join(dir, filepath.FromSlash(k)), old, old))
		}
	}
	segKeys := func(r transcript.TranscriptRef) []string {
		infos, err := s.ListSegments(ctx, r)
		require.NoError(t, err)
		var keys []string
		for _, in := range infos {
			keys = append(keys, in.Key)
		}
		return keys
	}

	appendChain(t, s, acmeRef("coder", "mixed"), w, "m", "", 1)
	backdate(segKeys(acmeRef("coder", "mixed"))...)
	appendChain(t, s, acmeRef("coder", "mixed"), w, "m2", "", 1)

	appendChain(t, s, acmeRef("coder", "old"), w, "o", "", 1)
	backdate(segKeys(acmeRef("coder", "old"))...)

	_, head, err := s.CreateSession(ctx, acmeRef("coder", "strict"), [][]byte{entry("h", "")}, w, transcript.CreateOptions{Strict: true, Head: "h"})
	require.NoError(t, err)
	backdate(segKeys(acmeRef("coder", "strict"))...)
	_, err = s.WriteHead(ctx, acmeRef("coder", "strict"), head, head.Commit(segKeys(acmeRef("coder", "strict"))[0], "h", nil))
	require.NoError(t, err, "a fresh head")

	appendChain(t, s, acmeRef("coder", "marked"), w, "k", "", 3)
	_, err = s.Compact(ctx, acmeRef("coder", "marked"), transcript.CompactOptions{MinSegments: 2, DeleteDelay: time.Hour})
	require.NoError(t, err)
	backdate(segKeys(acmeRef("coder", "marked"))...) // the deletion mark stays fresh

	r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: maxAge(30 * day)}}}
	res := retained(t, s, r, transcript.RetentionOptions{DeleteDelay: transcript.DeleteAtOnce})
	require.Equal(t, map[string]string{"coder/mixed": "kept", "coder/old": "deleted", "coder/strict": "deleted", "coder/marked": "deleted"}, actions(res))
	require.WithinDuration(t, old, res["coder/old"].LastUpdate, time.Second)
	require.Equal(t, 2, entryCount(t, s, acmeRef("coder", "mixed")))
}
