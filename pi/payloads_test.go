package pi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// spanTexts returns the text of each span of raw.
func spanTexts(raw string, spans []pi.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, raw[s.Start:s.End])
	}
	return out
}

// TestPayloadSpans lists which strings an entry may keep out of a segment: image
// data in every content array the model reads, and the text of tool results, from
// min bytes up; nothing else.
func TestPayloadSpans(t *testing.T) {
	big := strings.Repeat("A", 40)
	esc := `ab\"c\\` + strings.Repeat("x", 40) + `\n`
	for _, tc := range []struct {
		name, raw string
		want      []string
	}{
		{"user image", `{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"` + big + `"},{"type":"image","data":"` + big + `","mimeType":"image/png"}]}}`, []string{big}},
		{"tool result text and image", `{"type":"message","id":"1","message":{"role":"toolResult","toolCallId":"t","content":[{"type":"text","text":"` + esc + `"},{"type":"image","mimeType":"image/png","data":"` + big + `"}]}}`, []string{esc, big}},
		{"assistant text stays", `{"type":"message","id":"1","message":{"role":"assistant","content":[{"type":"text","text":"` + big + `"}]}}`, nil},
		{"string content stays", `{"type":"message","id":"1","message":{"role":"toolResult","content":"` + big + `"}}`, nil},
		{"small image stays", `{"type":"message","id":"1","message":{"role":"user","content":[{"type":"image","data":"AAAA"}]}}`, nil},
		{"custom message image", `{"type":"custom_message","id":"1","customType":"x","content":[{"type":"image","data":"` + big + `"}],"display":true}`, []string{big}},
		{"context edit image", `{"type":"context_edit","id":"1","targetId":"0","replacement":{"content":[{"type":"image","data":"` + big + `"}]}}`, []string{big}},
		{"context edit to null", `{"type":"context_edit","id":"1","targetId":"0","replacement":null}`, nil},
		{"other type", `{"type":"custom","id":"1","data":{"content":[{"type":"image","data":"` + big + `"}]}}`, nil},
		{"data not a string", `{"type":"message","id":"1","message":{"role":"user","content":[{"type":"image","data":{"x":"` + big + `"}}]}}`, nil},
		{"last key wins", `{"type":"message","id":"1","message":{"role":"user","content":[{"type":"image","data":"` + big + `","data":"` + big + `B"}]}}`, []string{big + "B"}},
		{"not an object", `["` + big + `"]`, nil},
		{"invalid", `{"type":"message","message":{"content":[{"type":"image","data":"` + big, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans := pi.PayloadSpans([]byte(tc.raw), 40)
			require.Equal(t, tc.want, spanTexts(tc.raw, spans))
			for _, s := range spans {
				require.Equal(t, byte('"'), tc.raw[s.Start-1])
				require.Equal(t, byte('"'), tc.raw[s.End])
			}
		})
	}
	require.Nil(t, pi.PayloadSpans([]byte(`{"type":"message","message":{"role":"user","content":[{"type":"image","data":"`+big+`"}]}}`), 0))
}

// FuzzPayloadSpans: on any input the spans are in order, inside the entry, never
// overlapping, each the contents of a string (quotes on both sides) of at least
// the minimum.
func FuzzPayloadSpans(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"1","message":{"role":"toolResult","content":[{"type":"text","text":"aaaaaaaa"},{"type":"image","data":"bbbbbbbb"}]}}`,
		`{"type":"custom_message","content":[{"type":"image","data":"x\"yyyyyyy"}]}`,
		`{"type":"context_edit","replacement":{"content":[{"type":"image","data":"zzzzzzzzz"}]}}`,
		`{"type":"message","message":{"content":[{"type":"image","data":"`,
	} {
		f.Add([]byte(s), 4)
	}
	f.Fuzz(func(t *testing.T, raw []byte, min int) {
		spans := pi.PayloadSpans(raw, min)
		end := 0
		for _, s := range spans {
			if s.Start < end+1 || s.End < s.Start+min || s.End >= len(raw) || raw[s.Start-1] != '"' || raw[s.End] != '"' {
				t.Fatalf("bad span %+v of %q (min %d)", s, raw, min)
			}
			end = s.End
		}
	})
}
