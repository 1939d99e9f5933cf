package jsonscan_test

import (
	"encoding/json"
	"strings"
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
		{"iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB", true},
		{`iVBORw0KGgoAAAAN\u00e9SUhEUgAAAAEAAAAB`, true},
		{`iVBORw0KGgoAAAAN\nSUhEUgAAAAEAAAA\`, false},
		{`iVBORw0KGgoAAAAN\qSUhEUgAAAAEAAAAB`, false},
		{`iVBORw0KGgoAAAAN\u12`, false},
		{`iVBORw0KGgoAAAA\u1234`, true},
		{`iVBORw0KGgoAAAANSUhEUgAAAAEAAAA\u1234`, true},
		{`iVBORw0KGgoAAAANSUhEUgAAAAEAAA\u123`, false},
		{`iVBORw0KGgoAAAANSUhEUgAAAAE\u123z`, false},
		{`\u1234iVBORw0KGgoAAAANSUhEUgAA`, true},
		{`iVBORw0KGgoAAAAN\\\\\\\\\\SUhEUgAAAAEAAAAB`, true},
		{`iVBORw0KGgoAAAANSUhEUgAAAAEAAAA\\\\\\\\\`, false},
		{`iVBORw0KGgoAAAAN"SUhEUgAAAAEAAAAB`, false},
		{"iVBORw0KGgoAAAANSUhE\x7fUgAAAAEAAAAB", true},
		{"iVBORw0KGgoAAAANSUhE\x1fUgAAAAEAAAAB", false},
		{"\x80\x81\xa2\xdc\xff\x9f\xa0\xe2\x80\x9c", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			require.Equal(t, tc.want, jsonscan.StringContent([]byte(tc.in)))
			require.Equal(t, json.Valid([]byte(`"`+tc.in+`"`)), jsonscan.StringContent([]byte(tc.in)), "json.Valid disagrees")
		})
	}
}

// FuzzStringContent holds StringContent to json.Valid of the bytes quoted.
func FuzzStringContent(f *testing.F) {
	for _, s := range []string{"", `a\"b`, `\u00e9`, `\`, "\x01", `"`, "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB", `iVBORw0K\\GgoAAA\"ANSUhE` + "\x1fUgAAAAEAAAAB"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		q := append(append([]byte{'"'}, b...), '"')
		if got, want := jsonscan.StringContent(b), json.Valid(q); got != want {
			t.Fatalf("StringContent(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

// BenchmarkStringContent checks a payload of 2 MiB of base64, as an image is.
func BenchmarkStringContent(b *testing.B) {
	p := []byte(strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB+/", 2<<20/34))
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if !jsonscan.StringContent(p) {
			b.Fatal("refused")
		}
	}
}
