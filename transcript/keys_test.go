package transcript_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

func TestParseKey(t *testing.T) {
	const good = "pre/fix/acme/coder/s1/L0/20261129T222836.123456789Z-host-1.ab-0000000000000007-00000000deadbeef.jsonl.zst"
	info, err := transcript.ParseKey("pre/fix", good)
	require.NoError(t, err)
	require.Equal(t, transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}, info.Ref)
	require.Equal(t, 0, info.Level)
	require.Equal(t, "host-1.ab", info.WriterID)
	require.Equal(t, uint64(7), info.Seq)
	require.Equal(t, uint64(0xdeadbeef), info.Hash)
	require.Equal(t, 2026, info.Time.Year())
	require.Equal(t, 123456789, info.Time.Nanosecond())

	bad := []struct{ name, prefix, key string }{
		{"other prefix", "other", good},
		{"no prefix given", "", good},
		{"too few elements", "", "acme/coder/L0/x.jsonl.zst"},
		{"no level", "", "acme/coder/s1/X0/20261129T222836.123456789Z-w-0000000000000001-0000000000000001.jsonl.zst"},
		{"bad level", "", "acme/coder/s1/Lx/20261129T222836.123456789Z-w-0000000000000001-0000000000000001.jsonl.zst"},
		{"no ext", "", "acme/coder/s1/L0/20261129T222836.123456789Z-w-0000000000000001-0000000000000001.jsonl"},
		{"bad time", "", "acme/coder/s1/L0/20261329T222836.123456789Z-w-0000000000000001-0000000000000001.jsonl.zst"},
		{"short seq", "", "acme/coder/s1/L0/20261129T222836.123456789Z-w-000000000000001-0000000000000001.jsonl.zst"},
		{"upper hash", "", "acme/coder/s1/L0/20261129T222836.123456789Z-w-0000000000000001-000000000000000A.jsonl.zst"},
		{"empty writer", "", "acme/coder/s1/L0/20261129T222836.123456789Z--0000000000000001-0000000000000001.jsonl.zst"},
		{"mark file", "", "acme/coder/s1/L0/20261129T222836.123456789Z-w-0000000000000001-0000000000000001.jsonl.zst.deleted"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := transcript.ParseKey(tt.prefix, tt.key)
			require.ErrorIs(t, err, transcript.ErrNotSegmentKey)
		})
	}
}
