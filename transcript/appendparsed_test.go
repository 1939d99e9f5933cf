package transcript_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// parsed parses each raw entry as a repository does and pairs it with its links.
func parsed(t *testing.T, raws [][]byte) []transcript.ParsedEntry {
	t.Helper()
	out := make([]transcript.ParsedEntry, len(raws))
	for i, raw := range raws {
		e, err := pi.ParseEntry(raw)
		require.NoError(t, err)
		out[i] = transcript.ParsedEntry{Raw: raw, Links: e.Links()}
	}
	return out
}

// TestAppendParsed_SameAsAppendSegment writes the same entries with
// AppendSegment and with AppendParsed (the links a repository read of them):
// the segments' metadata (ids, times, count) and what a read gives are the
// same, for entries with and without timestamps, roots and children, inline
// and with payloads taken out.
func TestAppendParsed_SameAsAppendSegment(t *testing.T) {
	untimed := []byte(`{"type":"label","id":"l1","parentId":"m2","targetId":"m1","label":"x"}`)
	tests := []struct {
		name      string
		threshold int
		entries   [][]byte
	}{
		{"one root", -1, [][]byte{entry("m1", "")}},
		{"chain with an untimed entry", -1, [][]byte{entry("m1", ""), entry("m2", "m1"), untimed}},
		{"payloads", testThreshold, [][]byte{imageEntry("m1", "", imageData(1, 4*testThreshold)), entry("m2", "m1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			b := membucket.New()
			s := newStore(t, b, transcript.Config{PayloadThreshold: tt.threshold})
			w := newWriter(t, "w")
			a, b2 := ref, ref
			a.SessionID, b2.SessionID = "plain", "parsed"
			plain, err := s.AppendSegment(ctx, a, tt.entries, w)
			require.NoError(t, err)
			got, err := s.AppendParsed(ctx, b2, parsed(t, tt.entries), w)
			require.NoError(t, err)
			pm, err := s.ReadSegmentMeta(ctx, plain.Key)
			require.NoError(t, err)
			gm, err := s.ReadSegmentMeta(ctx, got.Key)
			require.NoError(t, err)
			require.Equal(t, []any{pm.FirstID, pm.LastID, pm.MinTime, pm.MaxTime, pm.EntryCount, pm.RawLen, pm.Checksum},
				[]any{gm.FirstID, gm.LastID, gm.MinTime, gm.MaxTime, gm.EntryCount, gm.RawLen, gm.Checksum})
			pr, err := s.ReadAll(ctx, a)
			require.NoError(t, err)
			gr, err := s.ReadAll(ctx, b2)
			require.NoError(t, err)
			require.Equal(t, entryIDs(pr.Entries), entryIDs(gr.Entries))
			for i := range pr.Entries {
				require.Equal(t, pr.Entries[i].Raw, gr.Entries[i].Raw)
			}
		})
	}
}

// TestAppendParsed_DoesNotParseAgain checks that the store takes an inline
// entry's id and time from the links it is handed rather than scanning the
// entry (the repository's append validates each entry once, and the store
// does not repeat it): metadata made from links that differ from the bytes
// shows which was used. The size limit is still the store's own.
func TestAppendParsed_DoesNotParseAgain(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, membucket.New(), transcript.Config{PayloadThreshold: -1})
	w := newWriter(t, "w")
	raw := entry("m1", "")
	info, err := s.AppendParsed(ctx, ref, []transcript.ParsedEntry{{Raw: raw, Links: pi.Links{ID: "told", Type: "message"}}}, w)
	require.NoError(t, err)
	m, err := s.ReadSegmentMeta(ctx, info.Key)
	require.NoError(t, err)
	require.Equal(t, "told", m.FirstID, "the metadata is the links', not a second parse's")
	require.True(t, m.MinTime.IsZero(), "no timestamp in the links, none read from the entry")

	_, err = s.AppendParsed(ctx, ref, []transcript.ParsedEntry{{Raw: make([]byte, segment.DefaultMaxEntrySize+1), Links: pi.Links{ID: "big"}}}, w)
	require.ErrorIs(t, err, segment.ErrEntryTooLarge)
	_, err = s.AppendParsed(ctx, ref, nil, w)
	require.ErrorIs(t, err, transcript.ErrEmptySegment)
}

// BenchmarkAppendParsed compares AppendSegment, which validates and scans each
// entry to make the segment's metadata, with AppendParsed handed the links a
// repository's validation already read: the cost of the second validation a
// repository append used to pay. Memory bucket, one turn of 4 entries.
func BenchmarkAppendParsed(b *testing.B) {
	batch := benchBatch(0, 4)
	checked := make([]transcript.ParsedEntry, len(batch))
	for i, raw := range batch {
		e, err := pi.ParseEntry(raw)
		require.NoError(b, err)
		checked[i] = transcript.ParsedEntry{Raw: raw, Links: e.Links()}
	}
	for _, c := range []struct {
		name   string
		append func(s *transcript.Store, w *transcript.Writer) error
	}{
		{"AppendSegment", func(s *transcript.Store, w *transcript.Writer) error {
			_, err := s.AppendSegment(b.Context(), ref, batch, w)
			return err
		}},
		{"AppendParsed", func(s *transcript.Store, w *transcript.Writer) error {
			_, err := s.AppendParsed(b.Context(), ref, checked, w)
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newStore(b, membucket.New(), transcript.Config{PayloadThreshold: -1})
			w := newWriter(b, "w")
			b.ReportAllocs()
			for b.Loop() {
				if err := c.append(s, w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestPrepareParsed_SameAsPrepareSegments prepares one batch large enough to be
// cut into several segments with PrepareSegments and with PrepareParsed (the
// links a tree read of its entries): each run gets its own entries' links, so
// the segments' metadata is the same; links that differ from the bytes show
// they were used instead of a parse; a count of links that does not match the
// entries is refused.
func TestPrepareParsed_SameAsPrepareSegments(t *testing.T) {
	s := newStore(t, membucket.New(), transcript.Config{PayloadThreshold: -1})
	w := newWriter(t, "w")
	// Five entries of 30 KiB: segments of two, two and one within a target
	// of 64 KiB.
	transcript.SetSegmentTarget(s, 64<<10)
	pad := strings.Repeat("x", 30<<10)
	raws := [][]byte{entry("m0", "")}
	for i := range 5 {
		raws = append(raws, toolEntry(fmt.Sprintf("t%d", i), "m0", pad))
	}
	ps := parsed(t, raws)
	links := make([]pi.Links, len(ps))
	for i, p := range ps {
		links[i] = p.Links
	}
	plain, err := s.PrepareSegments(ref, raws, w)
	require.NoError(t, err)
	require.Greater(t, len(plain), 2, "the batch is cut into several segments")
	got, err := s.PrepareParsed(ref, raws, links, w)
	require.NoError(t, err)
	require.Len(t, got, len(plain))
	for i := range plain {
		pm, gm := plain[i].Meta, got[i].Meta
		require.Equal(t, []any{pm.FirstID, pm.LastID, pm.MinTime, pm.MaxTime, pm.EntryCount, pm.RawLen, pm.Checksum},
			[]any{gm.FirstID, gm.LastID, gm.MinTime, gm.MaxTime, gm.EntryCount, gm.RawLen, gm.Checksum}, "segment %d", i)
	}

	told := slices.Clone(links)
	told[len(told)-1].ID = "told"
	got, err = s.PrepareParsed(ref, raws, told, w)
	require.NoError(t, err)
	require.Equal(t, "told", got[len(got)-1].Meta.LastID, "the metadata is the links', not a second parse's")

	_, err = s.PrepareParsed(ref, raws, links[1:], w)
	require.ErrorContains(t, err, "links for")
	_, err = s.PrepareParsed(ref, nil, nil, w)
	require.ErrorIs(t, err, transcript.ErrEmptySegment)
}
