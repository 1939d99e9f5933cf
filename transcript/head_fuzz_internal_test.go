package transcript

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodeHead: any bytes decode to a head or fail with ErrInvalidHead, and a
// head that decodes encodes to bytes that decode to the same head.
func FuzzDecodeHead(f *testing.F) {
	f.Add([]byte(`{"format":1,"version":3,"head":"b","segments":["L0/20260301T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst"]}`))
	f.Add([]byte(`{"format":2,"version":7,"head":"","segments":[],"session":{"created":"2026-03-01T12:00:00Z","cwd":"/w","entries":0}}`))
	f.Add([]byte(`{"format":2,"version":1,"head":"x","segments":["L1/a"]}`))
	f.Add([]byte(`{"format":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := decodeHead(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidHead)
			return
		}
		enc, err := encodeHead(h)
		require.NoError(t, err)
		again, err := decodeHead(enc)
		require.NoError(t, err)
		if h.Segments == nil {
			h.Segments = []string{}
		}
		require.Equal(t, h, again)
	})
}

// FuzzDecodeSummary: any bytes decode to a cached summary or fail with
// ErrInvalidHead, and one that decodes round-trips.
func FuzzDecodeSummary(f *testing.F) {
	f.Add([]byte(`{"format":1,"tag":"ab","leaf":"x","session":{"updated":"2026-03-01T12:00:00.5Z","name":"n","parentSession":"p","entries":4}}`))
	f.Add([]byte(`{"format":1,"tag":"","session":{}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs, err := decodeSummary(data)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidHead)
			return
		}
		enc, err := encodeSummary(cs)
		require.NoError(t, err)
		again, err := decodeSummary(enc)
		require.NoError(t, err)
		require.Equal(t, cs, again)
	})
}
