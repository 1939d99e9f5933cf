package transcript

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestReadAll_ParsedAheadMatchesMerge checks that ReadAll, which parses level-0
// entries in the goroutines that fetch them, gives exactly what merging the fetched
// segments afterwards gives: the same entries with the same ids, parents, times and
// origins, the same conflicts, and the same invalid entries reported.
func TestReadAll_ParsedAheadMatchesMerge(t *testing.T) {
	ctx := context.Background()
	s, err := New(Config{Bucket: membucket.New(), Prefix: "p"})
	require.NoError(t, err)
	defer s.Close()
	ref := TranscriptRef{AgentID: "a", SessionID: "s"}
	w, err := NewWriter("w1")
	require.NoError(t, err)
	ts := func(i int) string {
		return time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339Nano)
	}
	ent := func(id, parent string, i int) []byte {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":%q}`, id, p, ts(i))
	}
	batches := [][][]byte{
		{ent("r", "", 0), ent("a", "r", 1)},
		{ent("b", "a", 2), ent("c", "b", 3)},
		{ent("b", "a", 9)}, // the same id with other bytes: a conflict
		{ent("d", "c", 4)},
	}
	for _, b := range batches {
		_, err := s.AppendSegment(ctx, ref, b, w)
		require.NoError(t, err)
	}
	// A level-0 segment holding entries the store refuses to write: stored under a
	// valid key by another writer, they must be reported, not merged.
	bad := [][]byte{[]byte(`{"type":"message","id":7}`), []byte(`not json`), ent("e", "d", 5)}
	data, meta, err := s.enc.Encode(segment.Meta{WriterID: "w2", Seq: 1}, bad)
	require.NoError(t, err)
	key := segmentKey(s.cfg.Prefix, ref.Norm(), 0, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), "w2", 1, meta.Checksum)
	require.NoError(t, s.cfg.Bucket.Put(ctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))

	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	infos, err := s.ListSegments(ctx, ref)
	require.NoError(t, err)
	segs, _, err := s.fetchAll(ctx, infos, true)
	require.NoError(t, err)
	want := merge(infos, segs)
	require.Equal(t, want.Entries, got.Entries)
	require.Equal(t, want.Conflicts, got.Conflicts)
	require.Equal(t, want.Losers, got.Losers)
	require.Equal(t, want.Invalid, got.Invalid)
	require.Len(t, got.Invalid, 2)
	require.Len(t, got.Entries, 6)
	for _, e := range got.Entries {
		require.False(t, e.Time.IsZero(), "entry %s has its time", e.ID)
	}
}

// TestParseEntriesChunked parses the same entries whole and in chunks of every
// size from one entry's bytes up: each record must be what parsing that entry
// alone gives, valid or not, whatever goroutine parsed it.
func TestParseEntriesChunked(t *testing.T) {
	var raws [][]byte
	var want []parsedEntry
	for i := range 200 {
		var raw []byte
		switch i % 7 {
		case 3:
			raw = []byte(`not json`)
		case 5:
			raw = fmt.Appendf(nil, `{"type":"message","id":%d}`, i) // id not a string
		default:
			raw = fmt.Appendf(nil, `{"type":"message","id":"e%d","parentId":"e%d","timestamp":"2026-01-01T00:00:%02dZ","text":%q}`,
				i, i-1, i%60, bytes.Repeat([]byte("x"), i%13*10))
		}
		raws = append(raws, raw)
		p := parsedEntry{}
		if e, err := parseStoredEntry(raw); err == nil {
			p = parsedEntry{id: e.ID, parent: e.ParentID, typ: e.Type, time: e.Time, ok: true}
		}
		want = append(want, p)
	}
	valid := 0
	for _, p := range want {
		if p.ok {
			valid++
		}
	}
	require.Equal(t, 200-2*29+1, valid, "the fixture holds both kinds") // i%7 in {3,5}: 29 and 28 entries
	require.Equal(t, want, parseEntries(raws))
	// With more procs, more runs: up to one per proc.
	for _, procs := range []int{1, 2, 3, 8} {
		prev := runtime.GOMAXPROCS(procs)
		for _, chunk := range []int{1, 50, 100, 1000, 5000, 1 << 30} {
			require.Equal(t, want, parseEntriesChunked(raws, chunk), "%d procs, chunks of %d bytes", procs, chunk)
		}
		runtime.GOMAXPROCS(prev)
	}
	require.Empty(t, parseEntriesChunked(nil, 1))
}
