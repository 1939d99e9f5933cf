package transcript

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// ReadHeadSince returns the head the caller holds, without parsing the stored
// one, while the stored head has its ETag; a head written since, or none held,
// is read and parsed.
func TestReadHeadSince(t *testing.T) {
	ctx := t.Context()
	s, err := New(Config{Bucket: membucket.New()})
	require.NoError(t, err)
	defer s.Close()
	ref := TranscriptRef{Namespace: "acme", AgentID: "a", SessionID: "s"}
	stored, err := s.WriteHead(ctx, ref, Head{}, Head{Version: 1, Entry: "e1"})
	require.NoError(t, err)

	// A held head whose Entry differs from the stored bytes' shows whether the
	// object was parsed.
	held := stored
	held.Entry = "as held"
	got, err := s.ReadHeadSince(ctx, ref, held)
	require.NoError(t, err)
	require.Equal(t, "as held", got.Entry, "same ETag: the held head, not parsed again")

	got, err = s.ReadHeadSince(ctx, ref, Head{})
	require.NoError(t, err)
	require.Equal(t, "e1", got.Entry, "none held: parsed")
	require.True(t, got.Same(stored))

	next, err := s.WriteHead(ctx, ref, stored, stored.Commit("L0/20260301T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst", "e2", nil))
	require.NoError(t, err)
	got, err = s.ReadHeadSince(ctx, ref, held)
	require.NoError(t, err)
	require.Equal(t, "e2", got.Entry, "written since: parsed")
	require.True(t, got.Same(next))
}

// observeHead feeds the clock the newest time of the level-0 keys a head names,
// parsing one key when the greatest parses, and every key when it does not.
func TestObserveHead(t *testing.T) {
	key := func(ts string) string { return "L0/" + ts + "-w-0000000000000001-00000000000000aa.jsonl.zst" }
	t1, t2, t3 := "20260301T120000.000000001Z", "20260301T120000.000000002Z", "20260301T120000.000000003Z"
	at := func(ts string) time.Time {
		tm, err := time.Parse(keyTimeLayout, ts)
		require.NoError(t, err)
		return tm
	}
	tests := []struct {
		name string
		segs []string
		want time.Time // zero: nothing observed
	}{
		{"the newest of level 0", []string{"L1/" + t3 + "-w-x.jsonl.zst", key(t1), key(t3), key(t2)}, at(t3)},
		{"the greatest name does not parse", []string{key(t1), "L0/99999999-not-a-time", key(t2)}, at(t2)},
		{"level 0 spelled L00", []string{key(t1), "L00/" + t3 + "-w.jsonl.zst"}, at(t3)},
		{"no level-0 key", []string{"L1/" + t3 + "-w-x.jsonl.zst"}, time.Time{}},
		{"none parses", []string{"L0/x", "L0/y"}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Bucket: membucket.New()})
			require.NoError(t, err)
			defer s.Close()
			ref := TranscriptRef{Namespace: "acme", AgentID: "a", SessionID: "s"}
			s.observeHead(ref, Head{Segments: tt.segs})
			s.cfg.Clock.mu.Lock()
			got := s.cfg.Clock.last[ref.Norm()]
			s.cfg.Clock.mu.Unlock()
			require.True(t, tt.want.Equal(got), "observed %v, want %v", got, tt.want)
		})
	}
}
