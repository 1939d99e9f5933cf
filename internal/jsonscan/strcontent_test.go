package jsonscan_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// TestStringContent: StringContent agrees with json.Valid of the bytes quoted.
func TestStringContent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"", true},
		{"iVBORw0KGgo+/=", true},
		{`a\"b`, true},
		{`\\`, true},
		{`\/\b\f\n\r\t`, true},
		{`\u00e9\uABCD`, true},
		{"caf\xc3\xa9", true},
		{"\xff\xfe", true}, // Valid does not check UTF-8
		{`"`, false},
		{`a"b`, false},
		{`\`, false},
		{`ab\`, false},
		{`\x`, false},
		{`\u12`, false},
		{`\u12g4`, false},
		{"a\nb", false},
		{"\x00", false},
		{"\x1f", false},
		{`\\\`, false},
		{`","type":"session`, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, jsonscan.StringContent([]byte(tc.in)))
			require.Equal(t, json.Valid([]byte(`"`+tc.in+`"`)), jsonscan.StringContent([]byte(tc.in)), "json.Valid disagrees")
		})
	}
}

// FuzzStringContent holds StringContent to json.Valid of the bytes quoted.
func FuzzStringContent(f *testing.F) {
	for _, s := range []string{"", `a\"b`, `\u00e9`, `\`, "\x01", `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q := append(append([]byte{'"'}, b...), '"')
		if got, want := jsonscan.StringContent(b), json.Valid(q); got != want {
			t.Fatalf("StringContent(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}
