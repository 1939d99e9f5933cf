package reliability_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// entryLines returns n linked message entries of a session, ids prefixed by tag.
func entryLines(tag string, from, n int) [][]byte {
	var out [][]byte
	for i := from; i < from+n; i++ {
		parent := "null"
		if i > 0 {
			parent = fmt.Sprintf("%q", fmt.Sprintf("%s-%04d", tag, i-1))
		}
		// Text that does not compress away, so that segments have some size.
		text := make([]byte, 48)
		r := mrand.New(mrand.NewPCG(uint64(i), uint64(len(tag))))
		for k := range text {
			text[k] = 'a' + byte(r.IntN(26))
		}
		out = append(out, fmt.Appendf(nil, `{"type":"message","id":"%s-%04d","parentId":%s,"timestamp":"2026-01-02T03:04:%02d.000Z","message":{"role":"user","content":"turn %d of %s: %s"}}`,
			tag, i, parent, i%60, i, tag, text))
	}
	return out
}

// typedSegmentError reports whether err is one of the typed errors a damaged
// segment may give.
func typedSegmentError(err error) bool {
	return errors.Is(err, segment.ErrCorrupt) || errors.Is(err, segment.ErrUnsupportedVersion) ||
		errors.Is(err, segment.ErrTooLarge) || errors.Is(err, segment.ErrEntryTooLarge)
}

// corruptionFixture is a file bucket with a victim session (three segments), two
// other sessions, and a compacted session whose inputs are still stored.
type corruptionFixture struct {
	dir                 string
	store, skip         *transcript.Store
	victim, compacted   transcript.TranscriptRef
	others              []transcript.TranscriptRef
	victimKey           string // the damaged segment
	victimEntries       int
	victimOthersEntries int // entries of the victim outside the damaged segment
	compactedInput      string
	compactedEntries    int
}

func newCorruptionFixture(t *testing.T) *corruptionFixture {
	ctx := ctxTimeout(t, time.Minute)
	f := &corruptionFixture{dir: filepath.Join(t.TempDir(), "bucket")}
	b, err := filebucket.New(f.dir)
	require.NoError(t, err)
	f.store = newStore(t, b, "")
	f.skip, err = transcript.New(transcript.Config{Bucket: b, SkipCorrupt: true})
	require.NoError(t, err)
	t.Cleanup(func() { f.skip.Close() })
	w, err := transcript.NewWriter("corrupt")
	require.NoError(t, err)
	f.victim = transcript.TranscriptRef{AgentID: "a", SessionID: "victim"}
	var infos []transcript.SegmentInfo
	for k := range 3 {
		info, err := f.store.AppendSegment(ctx, f.victim, entryLines("v", k*8, 8), w)
		require.NoError(t, err)
		infos = append(infos, info)
	}
	f.victimKey, f.victimEntries, f.victimOthersEntries = infos[1].Key, 24, 16
	for i := range 2 {
		ref := transcript.TranscriptRef{AgentID: "a", SessionID: fmt.Sprintf("other%d", i)}
		for k := range 2 {
			_, err := f.store.AppendSegment(ctx, ref, entryLines(ref.SessionID, k*5, 5), w)
			require.NoError(t, err)
		}
		f.others = append(f.others, ref)
	}
	f.compacted = transcript.TranscriptRef{AgentID: "a", SessionID: "compacted"}
	for k := range 4 {
		info, err := f.store.AppendSegment(ctx, f.compacted, entryLines("c", k*4, 4), w)
		require.NoError(t, err)
		if k == 2 {
			f.compactedInput = info.Key
		}
	}
	f.compactedEntries = 16
	res, err := f.store.Compact(ctx, f.compacted, transcript.CompactOptions{}) // inputs stay for the delete delay
	require.NoError(t, err)
	require.Equal(t, 4, res.SegmentsIn())
	return f
}

func (f *corruptionFixture) path(key string) string {
	return filepath.Join(f.dir, filepath.FromSlash(key))
}

// damage replaces the stored object key with data, as bit rot or a bad copy would.
func (f *corruptionFixture) damage(t *testing.T, key string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(f.path(key), data, 0o644))
}

// checkDamaged checks the store's answers with the damaged victim segment in place.
// It returns whether the damage was detected; an undetected one must have left the
// decoded entries exactly as written (a flip of a bit zstd does not use).
func (f *corruptionFixture) checkDamaged(t *testing.T, ctx context.Context, orig *segment.Segment, what string) (detected bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s: panic: %v", what, r)
		}
	}()
	seg, err := f.store.ReadSegment(ctx, f.victimKey)
	if err == nil {
		// Undetected by the decoder: the content must be untouched.
		require.Equal(t, orig.Entries, seg.Entries, "%s: damaged segment decoded to other entries", what)
		require.Equal(t, orig.Meta.Checksum, seg.Meta.Checksum, what)
		res, err := f.store.ReadAll(ctx, f.victim)
		require.NoError(t, err, what)
		require.Len(t, res.Entries, f.victimEntries, what)
		return false
	}
	require.True(t, typedSegmentError(err), "%s: untyped error %v", what, err)
	require.Contains(t, err.Error(), f.victimKey, "%s: the error names the segment", what)
	_, err = f.store.ReadAll(ctx, f.victim)
	require.ErrorIs(t, err, segment.ErrCorrupt, what)
	// A reader that skips corrupt segments gets the rest and the name of the bad one.
	res, err := f.skip.ReadAll(ctx, f.victim)
	require.NoError(t, err, what)
	require.Len(t, res.Corrupt, 1, what)
	require.Equal(t, f.victimKey, res.Corrupt[0].Key, what)
	require.Len(t, res.Entries, f.victimOthersEntries, what)
	// Other sessions read on.
	for _, ref := range f.others {
		res, err := f.store.ReadAll(ctx, ref)
		require.NoError(t, err, "%s: other session %s", what, ref)
		require.Len(t, res.Entries, 10, what)
	}
	return true
}

// verifyNames runs the real `transcript verify` and checks that it exits 1 and
// names key among its problems.
func verifyNames(t *testing.T, dir, key string) {
	t.Helper()
	cmd := exec.Command(buildCmd(t, "transcript"), "verify", "--store", "file://"+dir, "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "verify must fail on a damaged segment; stderr: %s", stderr.String())
	require.Equal(t, 1, ee.ExitCode(), stderr.String())
	var sum struct {
		Problems []struct{ Session, Key, Problem string }
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &sum), stdout.String())
	for _, p := range sum.Problems {
		if strings.HasSuffix(key, p.Key) && p.Key != "" {
			return
		}
	}
	t.Fatalf("verify does not name %s: %s", key, stdout.String())
}

// TestCorruption: every byte of a stored segment is flipped,
// and the segment is truncated at every length. Each damage is detected with a
// typed error naming the segment (or, for a bit zstd ignores, leaves the entries
// exactly as written), never a panic; a reader that skips corrupt segments names it
// and reads the rest; other sessions read on; `transcript verify` names it (for a
// sample of the damages: each run is a process).
func TestCorruption(t *testing.T) {
	f := newCorruptionFixture(t)
	ctx := ctxTimeout(t, 3*time.Minute)
	rng := seeded(t)
	orig, err := os.ReadFile(f.path(f.victimKey))
	require.NoError(t, err)
	origSeg, err := f.store.ReadSegment(ctx, f.victimKey)
	require.NoError(t, err)
	verifyEvery := len(orig) / 6
	if testing.Short() {
		verifyEvery = len(orig) // one run
	}

	flips, flipsDetected, verified := 0, 0, 0
	for i := range orig {
		for _, mask := range []byte{0xff, byte(1 << rng.IntN(8))} {
			bad := bytes.Clone(orig)
			bad[i] ^= mask
			f.damage(t, f.victimKey, bad)
			flips++
			if f.checkDamaged(t, ctx, origSeg, fmt.Sprintf("byte %d ^ %#02x", i, mask)) {
				flipsDetected++
				if i%verifyEvery == 0 && mask == 0xff {
					verifyNames(t, f.dir, f.victimKey)
					verified++
				}
			}
		}
	}
	truncs := 0
	for n := range len(orig) {
		f.damage(t, f.victimKey, orig[:n])
		truncs++
		require.True(t, f.checkDamaged(t, ctx, origSeg, fmt.Sprintf("truncated to %d bytes", n)), "truncation to %d undetected", n)
		if n%verifyEvery == 1 {
			verifyNames(t, f.dir, f.victimKey)
			verified++
		}
	}
	// Garbage appended after a valid segment is damage too.
	f.damage(t, f.victimKey, append(bytes.Clone(orig), "trailing garbage"...))
	require.True(t, f.checkDamaged(t, ctx, origSeg, "trailing garbage"))
	f.damage(t, f.victimKey, orig)
	t.Logf("segment of %d bytes: %d flips (%d detected, %d left the entries intact), %d truncations (all detected), %d verify runs naming it; panics 0",
		len(orig), flips, flipsDetected, flips-flipsDetected, truncs, verified)
}

// TestCorruption_SupersededInput: a session whose corrupt segment a compacted
// segment supersedes still reads fully and without error (the reader never needs
// the input), while verify still names the damaged input.
func TestCorruption_SupersededInput(t *testing.T) {
	f := newCorruptionFixture(t)
	ctx := ctxTimeout(t, time.Minute)
	want, err := f.store.ReadAll(ctx, f.compacted)
	require.NoError(t, err)
	require.Len(t, want.Entries, f.compactedEntries)
	data, err := os.ReadFile(f.path(f.compactedInput))
	require.NoError(t, err)
	for _, bad := range [][]byte{nil, data[:len(data)/2], bytes.Repeat([]byte{0xa5}, len(data))} {
		f.damage(t, f.compactedInput, bad)
		res, err := f.store.ReadAll(ctx, f.compacted)
		require.NoError(t, err)
		require.Equal(t, want.Raw(), res.Raw(), "the compacted session reads fully")
		res, err = f.skip.ReadAll(ctx, f.compacted)
		require.NoError(t, err)
		require.Empty(t, res.Corrupt)
		require.Len(t, res.Entries, f.compactedEntries)
	}
	verifyNames(t, f.dir, f.compactedInput)
}
