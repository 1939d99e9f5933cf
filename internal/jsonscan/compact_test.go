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
