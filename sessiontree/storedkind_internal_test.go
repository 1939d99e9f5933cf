package sessiontree

import (
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/segment"
)

// storedKindSeeds are lines of every kind ClassifyRaw tells, with strings to
// take out as payloads.
var storedKindSeeds = []string{
	`{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":[{"type":"image","data":"iVBORw0KGgo="}]}}`,
	`{"type":"leaf","id":"l1","parentId":"a2","timestamp":"2026-01-01T00:00:00.000Z","targetId":"a1","note":"x\"y"}`,
	`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`,
	`{"type":"session","id":"n3","version":"x","cwd":"/w"}`,
	`{"id":"n1","parentId":null,"text":"hello"}`,
	`["not","an","object"]`,
	`{"type":"message","id":"a1","parentId":"a1","x":"a\u00e9b"} trailing`,
	`{"type":"REF","id":"h","version":3}`,
}

// checkStoredKind takes the bytes between the quotes at a-1 and b of raw (the
// contents of a JSON string, when raw is valid JSON and a-1 opens it) out as a
// payload, as a writer does, and checks WriteRestoredStored's rule: when the
// payload is a string's contents and storedKindHolds accepts the stored form,
// the stored form classifies as raw does.
func checkStoredKind(t *testing.T, raw []byte, a, b int) {
	payload := raw[a:b]
	h := sha256.Sum256(payload)
	stored := append(append(append([]byte(nil), raw[:a]...), segment.RefText(h)...), raw[b:]...)
	refs := []segment.PayloadRef{{Off: uint32(a), Size: uint64(len(payload)), Hash: h}}
	storedKind, _ := ClassifyRaw(stored)
	if !jsonscan.StringContent(payload) || !storedKindHolds(stored, storedKind, refs, nil) {
		return
	}
	kind, _ := ClassifyRaw(raw)
	require.Equal(t, kind, storedKind, "%s as stored: %s", raw, stored)
}

// TestStoredKind_EveryKind: for every string of lines of every kind taken out
// as a payload, the stored form classifies as the line does wherever
// WriteRestoredStored relies on it.
func TestStoredKind_EveryKind(t *testing.T) {
	kinds := map[RawKind]int{}
	checked := 0
	for _, s := range storedKindSeeds {
		raw := []byte(s)
		k, _ := ClassifyRaw(raw)
		kinds[k]++
		for a := 1; a < len(raw); a++ {
			if raw[a-1] != '"' {
				continue
			}
			for b := a + 1; b < len(raw); b++ {
				if raw[b] == '"' {
					checkStoredKind(t, raw, a, b)
					checked++
				}
			}
		}
	}
	require.Len(t, kinds, 4, "every kind among the seeds")
	require.Greater(t, checked, 100)
}

// FuzzStoredKind is TestStoredKind_EveryKind over any line and any pair of
// quotes in it.
func FuzzStoredKind(f *testing.F) {
	for _, s := range storedKindSeeds {
		f.Add([]byte(s), uint16(1), uint16(2))
	}
	f.Fuzz(func(t *testing.T, raw []byte, i, j uint16) {
		var quotes []int
		for k, c := range raw {
			if c == '"' {
				quotes = append(quotes, k)
			}
		}
		if len(quotes) < 2 {
			return
		}
		x, y := quotes[int(i)%len(quotes)], quotes[int(j)%len(quotes)]
		if x+1 >= y {
			return
		}
		checkStoredKind(t, raw, x+1, y)
	})
}
