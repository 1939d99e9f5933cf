package transcript_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestCanonicalOrder checks the merge order on entries given out of order, and
// that a child placed right after an entry of its parent's id is placed after the
// entry that id indexes (the last of that id), whether or not ids are distinct.
func TestCanonicalOrder(t *testing.T) {
	at := func(key string, pos int) transcript.Origin {
		return transcript.Origin{Key: "L0/" + key + "-w-1-h.jsonl.zst", Pos: pos}
	}
	tests := []struct {
		name    string
		entries []transcript.Entry
		want    []string // ids with origin positions, in merge order
	}{
		{
			name: "in order",
			entries: []transcript.Entry{
				{ID: "a", Origin: at("1", 0)},
				{ID: "b", ParentID: "a", Origin: at("1", 1)},
				{ID: "c", ParentID: "b", Origin: at("1", 2)},
			},
			want: []string{"a0", "b1", "c2"},
		},
		{
			name: "by origin, then parents first",
			entries: []transcript.Entry{
				{ID: "c", ParentID: "b", Origin: at("1", 0)},
				{ID: "b", ParentID: "a", Origin: at("2", 0)},
				{ID: "a", Origin: at("1", 1)},
			},
			want: []string{"a1", "b0", "c0"},
		},
		{
			// A parent id names the last entry of that id: b waits for the
			// second a although the first comes right before it.
			name: "duplicate ids",
			entries: []transcript.Entry{
				{ID: "a", Origin: at("1", 0)},
				{ID: "b", ParentID: "a", Origin: at("1", 1)},
				{ID: "a", ParentID: "z", Origin: at("1", 2)},
			},
			want: []string{"a0", "a2", "b1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]transcript.Entry(nil), tt.entries...)
			got, cycles := transcript.CanonicalOrder(in)
			require.Zero(t, cycles)
			require.Equal(t, tt.entries, in, "entries is not modified")
			var ids []string
			for _, e := range got {
				ids = append(ids, e.ID+string(rune('0'+e.Origin.Pos)))
			}
			require.Equal(t, tt.want, ids)
		})
	}
}
