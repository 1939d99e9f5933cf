package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// CompactInPlace removes what json.Compact removes, and only that.
func TestCompactInPlace(t *testing.T) {
	for _, v := range []string{
		`{}`, `{"a":1}`, " { \"a\" :\t[ 1 ,\r\n 2 ] } ", `{"s":"a b\t\"c\" \\"}`, `"  "`, `[ "\\\\" , " " ]`,
		`{"k" : "\u00e9 \ud83d\ude00" , "n" : -1.5e3 , "t" : true }`,
	} {
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, []byte(v)))
		require.Equal(t, want.String(), string(CompactInPlace([]byte(v))), v)
	}
}

func FuzzCompactInPlace(f *testing.F) {
	for _, v := range []string{`{"a" : [1, "b c"]}`, `" \\\" "`, "[\n]"} {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		if !json.Valid(v) {
			return
		}
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, v))
		require.Equal(t, want.String(), string(CompactInPlace(bytes.Clone(v))))
	})
}

// CompactInPlaceIf asks before it changes anything, and only when it would:
// refused, it leaves v as given; allowed, it compacts as CompactInPlace does.
func TestCompactInPlaceIf(t *testing.T) {
	for _, tt := range []struct {
		v       string
		changes bool
	}{
		{`{}`, false},
		{`{"a":"b c","d":[1,2]}`, false},
		{`{"a" :1}`, true},
		{" {}", true},
		{"{}\n", true},
		{`["x", "y"]`, true},
		{`{"a":1 2}`, true}, // not JSON: still asked first
		{`"unterminated `, false},
	} {
		t.Run(tt.v, func(t *testing.T) {
			v := []byte(tt.v)
			asked := 0
			out, done := CompactInPlaceIf(v, func() bool { asked++; return false })
			require.Equal(t, tt.changes, asked == 1, "asked %d times", asked)
			require.Equal(t, !tt.changes, done)
			require.Equal(t, tt.v, string(v), "v is left as given")
			require.Equal(t, tt.v, string(out))

			asked = 0
			out, done = CompactInPlaceIf([]byte(tt.v), func() bool { asked++; return true })
			require.True(t, done)
			require.Equal(t, tt.changes, asked == 1, "asked %d times", asked)
			require.Equal(t, string(CompactInPlace([]byte(tt.v))), string(out))
		})
	}
}
