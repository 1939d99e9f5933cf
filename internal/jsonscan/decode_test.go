package jsonscan_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// stringCases are JSON string tokens and their text as JavaScript's JSON.parse
// gives it of the token read from a file as UTF-8 (Node's decoder), written in
// WTF-8 (a lone surrogate as its three bytes). Each was checked with Node 20:
// JSON.parse(fs.readFileSync(f, "utf8")).
var stringCases = []struct{ token, want string }{
	{`"abc"`, "abc"},
	{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t"},
	{`"\u00e9\u00C9é"`, "éÉé"},
	{`"\ud800"`, "\xed\xa0\x80"},
	{`"\udc00"`, "\xed\xb0\x80"},
	{`"\uDFFF"`, "\xed\xbf\xbf"},
	{`"\ud83d\ude00"`, "😀"},
	{`"\uD83D\uDE00"`, "😀"},
	{`"\ud83d😀"`, "\xed\xa0\xbd😀"},
	{`"\ud800\u0041"`, "\xed\xa0\x80A"},
	{`"\ud800\ud800"`, "\xed\xa0\x80\xed\xa0\x80"},
	{`"\udc00\ud800"`, "\xed\xb0\x80\xed\xa0\x80"},
	{`"\ud800\ud800\udc00"`, "\xed\xa0\x80\U00010000"},
	{`"x\ud800"`, "x\xed\xa0\x80"},
	{`"\ud800\n"`, "\xed\xa0\x80\n"},
	{`"\ufffd"`, "\uFFFD"},
	{`"\u0000"`, "\x00"},
	// Bytes that are not UTF-8: Node's decoder makes each maximal prefix of a
	// sequence one U+FFFD before JSON.parse sees the text.
	{"\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD"},
	{"\"\xe2\x82\"", "\uFFFD"},
	{"\"\xe2\x82A\"", "\uFFFDA"},
	{"\"\xf0\x9f\x98\"", "\uFFFD"},
	{"\"\xf0\x9f\x98\xf0\x9f\x98\x80\"", "\uFFFD😀"},
	{"\"\xff\xfe\"", "\uFFFD\uFFFD"},
	{"\"\xc0\xaf\"", "\uFFFD\uFFFD"},
	{"\"\xe0\x80\x80\"", "\uFFFD\uFFFD\uFFFD"},
	{"\"\xf4\x90\x80\x80\"", "\uFFFD\uFFFD\uFFFD\uFFFD"},
	{"\"\xef\xbf\xbd\"", "\uFFFD"},
	{"\"é\x80\"", "é\uFFFD"},
}

// TestString_JavaScriptStrings: a JSON string decodes to the text JSON.parse
// gives of it, and distinct JavaScript strings to distinct Go strings: ids
// "\ud800" and "\udc00" are two entries for Pi. encoding/json, which String
// used, made every lone surrogate U+FFFD (the two ids one), and every byte
// that is not UTF-8 one U+FFFD, where Node makes one of a truncated sequence.
func TestString_JavaScriptStrings(t *testing.T) {
	for _, tt := range stringCases {
		got, ok := jsonscan.String([]byte(tt.token))
		require.True(t, ok, tt.token)
		require.Equal(t, tt.want, got, "%q", tt.token)
		b, ok := jsonscan.StringBytes([]byte(tt.token))
		require.True(t, ok, tt.token)
		require.Equal(t, tt.want, string(b), "%q", tt.token)
	}
	a, _ := jsonscan.String([]byte(`"\ud800"`))
	b, _ := jsonscan.String([]byte(`"\udc00"`))
	c, _ := jsonscan.String([]byte("\"\xed\xa0\x80\""))
	require.NotEqual(t, a, b)
	require.NotEqual(t, a, c, "the raw bytes ED A0 80 are three U+FFFD for Pi, not \\ud800")
	for _, bad := range []string{``, `"`, `x`, `1`, `null`, `"\"`, `"\x"`, `"\u12"`, `"\u12g4"`, `"\ud800\u12"`, "\"a\x01\"", `"a" `, `""0"`, `"a"b"`} {
		_, ok := jsonscan.String([]byte(bad))
		require.False(t, ok, "%q", bad)
		_, ok = jsonscan.StringBytes([]byte(bad))
		require.False(t, ok, "%q", bad)
	}
}

// TestEachField_LoneSurrogateKeys: keys are decoded as String decodes values,
// so the keys "\ud800" and "\udc00" are two, as for JSON.parse.
func TestEachField_LoneSurrogateKeys(t *testing.T) {
	require.Equal(t, map[string]string{"\xed\xa0\x80": "1", "\xed\xb0\x80": "2"}, fields(t, `{"\ud800":1,"\udc00":2}`))
}

// FuzzString: String accepts the JSON string tokens encoding/json accepts and
// no other, and where neither a lone surrogate nor a byte that is not UTF-8
// is involved (the token and the text are UTF-8) gives encoding/json's text.
func FuzzString(f *testing.F) {
	for _, tt := range stringCases {
		f.Add([]byte(tt.token))
	}
	f.Add([]byte(`"\u12"`))
	f.Fuzz(func(t *testing.T, token []byte) {
		got, ok := jsonscan.String(token)
		var want string
		wantOK := json.Unmarshal(token, &want) == nil && len(token) > 0 && token[0] == '"' && token[len(token)-1] == '"'
		require.Equal(t, wantOK, ok, "%q", token)
		if ok && utf8.Valid(token) && utf8.ValidString(got) {
			require.Equal(t, want, got, "%q", token)
		}
	})
}
