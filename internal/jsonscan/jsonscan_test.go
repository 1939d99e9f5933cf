package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

func fields(t *testing.T, obj string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, jsonscan.EachField([]byte(obj), func(k string, v []byte, off int) {
		require.Equal(t, string(v), obj[off:off+len(v)], "offset points at the value")
		out[k] = string(v)
	}))
	return out
}

func TestEachField(t *testing.T) {
	tests := []struct {
		obj  string
		want map[string]string
	}{
		{`{}`, map[string]string{}},
		{` { "a" : 1 , "b":"x\"}" } `, map[string]string{"a": "1", "b": `"x\"}"`}},
		{`{"id":"a","ID":"b","Id":null}`, map[string]string{"id": `"a"`, "ID": `"b"`, "Id": "null"}},
		{`{"id":"first","id":"last"}`, map[string]string{"id": `"last"`}},
		{`{"m":{"id":"inner","x":[1,{"y":"]"}]},"id":"outer"}`, map[string]string{"m": `{"id":"inner","x":[1,{"y":"]"}]}`, "id": `"outer"`}},
		{`{"\u0069d":"escaped key","n":-1.5e3,"t":true}`, map[string]string{"id": `"escaped key"`, "n": "-1.5e3", "t": "true"}},
		// Runs of backslashes before a quote: even ends the string, odd escapes it.
		{`{"a":"x\\","b":"\\\"q\\\\","c":"\"","d":["\\",{"e":"\\\""}]}`,
			map[string]string{"a": `"x\\"`, "b": `"\\\"q\\\\"`, "c": `"\""`, "d": `["\\",{"e":"\\\""}]`}},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, fields(t, tt.obj), tt.obj)
	}
	for _, bad := range []string{``, `[]`, `"s"`, `{"a"`, `{"a":`, `{"a":"x`, `{"a":"x\"}`, `{"a":"\\\"}`, `{"a":1 "b":2}`, `{"a" 1}`} {
		require.ErrorIs(t, jsonscan.EachField([]byte(bad), func(string, []byte, int) {}), jsonscan.ErrSyntax, bad)
	}
}

func TestEachElement(t *testing.T) {
	for arr, want := range map[string][]string{
		`[]`:                          nil,
		` [ 1 , "a\"]" ,{"b":[2]} ] `: {"1", `"a\"]"`, `{"b":[2]}`},
		`[null]`:                      {"null"},
	} {
		var got []string
		require.NoError(t, jsonscan.EachElement([]byte(arr), func(v []byte, off int) {
			require.Equal(t, string(v), arr[off:off+len(v)], "offset points at the element")
			got = append(got, string(v))
		}), arr)
		require.Equal(t, want, got, arr)
	}
	for _, bad := range []string{``, `{}`, `[1`, `[1 2]`, `["x]`} {
		require.ErrorIs(t, jsonscan.EachElement([]byte(bad), func([]byte, int) {}), jsonscan.ErrSyntax, bad)
	}
}

// TestScanFields: a caller that reads an array value itself (EachElementAt)
// gets the elements and fields EachRawField and EachElement give, and the
// ends it returns are where SkipValue ends each value.
func TestScanFields(t *testing.T) {
	for _, obj := range []string{
		`{"entries":[{"id":"a"}, [1,"]"] ,"x\"]"],"nextSeq":3,"head":null}`,
		` { "n" : 1 , "entries" : [ ] , "e\u006etries" : [ 7 ] } `,
		`{}`,
	} {
		type field struct{ key, v string }
		var want, got []field
		var wantElems, gotElems []string
		require.NoError(t, jsonscan.EachRawField([]byte(obj), func(key, v []byte, _ int) {
			want = append(want, field{string(key), string(v)})
			if v[0] == '[' {
				require.NoError(t, jsonscan.EachElement(v, func(e []byte, _ int) { wantElems = append(wantElems, string(e)) }))
			}
		}), obj)
		b := []byte(obj)
		require.NoError(t, jsonscan.ScanFields(b, func(key []byte, at int) (int, error) {
			skip, err := jsonscan.SkipValue(b, at)
			require.NoError(t, err)
			end := skip
			if b[at] == '[' {
				end, err = jsonscan.EachElementAt(b, at, func(e []byte, off int) {
					require.Equal(t, string(e), obj[off:off+len(e)], "offset points at the element")
					gotElems = append(gotElems, string(e))
				})
				require.NoError(t, err)
				require.Equal(t, skip, end, "EachElementAt ends where SkipValue does")
			}
			got = append(got, field{string(key), obj[at:end]})
			return end, nil
		}), obj)
		require.Equal(t, want, got, obj)
		require.Equal(t, wantElems, gotElems, obj)

		// Inside other JSON, ScanFieldsAt ends where SkipValue does.
		outer := []byte(`[` + strings.TrimSpace(obj) + `,1]`)
		end, err := jsonscan.ScanFieldsAt(outer, 1, func(_ []byte, at int) (int, error) { return jsonscan.SkipValue(outer, at) })
		require.NoError(t, err, obj)
		skip, err := jsonscan.SkipValue(outer, 1)
		require.NoError(t, err, obj)
		require.Equal(t, skip, end, obj)
	}
	for _, bad := range []string{`{"a":[1 2]}`, `{"a":[1,}`, `[1]`} {
		b := []byte(bad)
		err := jsonscan.ScanFields(b, func(_ []byte, at int) (int, error) { return jsonscan.EachElementAt(b, at, func([]byte, int) {}) })
		require.ErrorIs(t, err, jsonscan.ErrSyntax, bad)
	}
}

func TestString(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", `"a\nb"`: "a\nb", `"\u00e9"`: "é", `"é"`: "é", `""`: ""} {
		got, ok := jsonscan.String([]byte(in))
		require.True(t, ok, in)
		require.Equal(t, want, got)
	}
	for _, in := range []string{``, `null`, `1`, `"`, `{"a":1}`} {
		_, ok := jsonscan.String([]byte(in))
		require.False(t, ok, in)
	}
}

// StringBytes decodes as String does, and shares the value's bytes when
// there is nothing to decode.
func TestStringBytes(t *testing.T) {
	for _, in := range []string{`"abc"`, `"a\nb"`, `"\u00e9"`, `"é"`, `""`, ``, `null`, `1`, `"`, `{"a":1}`} {
		want, wantOK := jsonscan.String([]byte(in))
		got, ok := jsonscan.StringBytes([]byte(in))
		require.Equal(t, wantOK, ok, in)
		require.Equal(t, want, string(got), in)
	}
	v := []byte(`"role"`)
	got, _ := jsonscan.StringBytes(v)
	require.Same(t, &v[1], &got[0], "a plain string is not copied")
}

func TestField(t *testing.T) {
	require.Equal(t, `"b"`, string(jsonscan.Field([]byte(`{"a":"x","a":"b"}`), "a")))
	require.Nil(t, jsonscan.Field([]byte(`{"a":1}`), "b"))
}

// surrogatesAsReplacement replaces the WTF-8 bytes of each lone surrogate in s,
// which the scanner makes of a lone surrogate escape ("\ud800"), with U+FFFD, as
// encoding/json decodes that escape.
func surrogatesAsReplacement(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i+2 < len(s) && s[i] == 0xed && s[i+1] >= 0xa0 && s[i+1] <= 0xbf && s[i+2] >= 0x80 && s[i+2] <= 0xbf {
			b.WriteRune(utf8.RuneError)
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FuzzEachField checks the scanner against encoding/json on every valid object
// of valid UTF-8: the same keys (last duplicate wins) with the same values. The
// two decode differently on purpose where the scanner follows Node (decode.go):
// a lone surrogate escape, compared here as encoding/json's U+FFFD, and bytes
// that are not UTF-8 (a truncated sequence is one U+FFFD for Node, one per byte
// for encoding/json), where only the absence of a panic is checked.
func FuzzEachField(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,2,{"c":"d"}],"a":"\"}"}`, `{"type":"message","id":"1","parentId":null}`,
		`{"x":{"y":{"z":[[]]}},"e":"\u00e9\ud83d\ude00"}`, ` {"a" : true , "b" : false } `,
		`{"\ud800":1,"\ufffd":2}`, "{\"\xed\x96\":\"\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]string{}
		err := jsonscan.EachField(b, func(k string, v []byte, _ int) {
			got[surrogatesAsReplacement(k)] = string(v)
		})
		var want map[string]json.RawMessage
		if json.Unmarshal(b, &want) != nil || want == nil || !utf8.Valid(b) {
			return // not a valid object of UTF-8: the scanner may say anything but must not panic
		}
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for k, v := range want {
			require.Contains(t, got, k)
			require.Equal(t, string(bytes.TrimSpace(v)), got[k], k)
		}
	})
}
