package jsonscan

import "unicode/utf8"

// appendDecoded appends the text of the JSON string whose contents (the bytes
// between its quotes) are s to dst, as JavaScript's JSON.parse gives it of a
// file that Node read as UTF-8, the way Pi reads a session file: ok is false
// when s is not the contents of a JSON string (an unescaped quote or control
// character, an escape that is not one).
//
// JavaScript strings are UTF-16, Go strings bytes; the text is written in
// WTF-8, so that distinct JavaScript strings stay distinct Go strings:
//
//   - An escape of a lone surrogate (\ud800, \udc00: JSON.stringify writes one
//     of a string that holds it) is the surrogate's three bytes (ED A0 80), not
//     U+FFFD, which encoding/json makes of every lone surrogate: "\ud800" and
//     "\udc00" are two ids for Pi, and must not be one for the store. A pair of
//     a high and a low surrogate escape is the one code point they encode, as
//     its UTF-8 bytes: the text of "\ud83d\ude00" is that of "😀".
//   - Bytes that are not UTF-8 in s are decoded as Node's UTF-8 decoder
//     (WHATWG's) decodes them when it reads the file, before JSON.parse sees
//     them: each maximal prefix of a sequence becomes one U+FFFD. Such ids do
//     collide in Pi (the raw bytes ED A0 80 are three U+FFFD there, unlike
//     \ud800), and so they do here; encoding/json made each byte one U+FFFD,
//     which differs from Node's for a truncated sequence (E2 82 is one U+FFFD).
//
// Valid UTF-8 without escapes is its own text, as before.
func appendDecoded(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c < 0x20:
			return nil, false
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			if c = unescape(s[i+1]); c != 0 {
				dst = append(dst, c)
				i += 2
				continue
			}
			if s[i+1] != 'u' {
				return nil, false
			}
			r, ok := hex4(s[i+2:])
			if !ok {
				return nil, false
			}
			i += 6
			if 0xD800 <= r && r < 0xDC00 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
				if lo, ok := hex4(s[i+2:]); ok && 0xDC00 <= lo && lo < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			dst = appendWTF8(dst, r)
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n <= 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
				i += maximalSubpart(s[i:])
				continue
			}
			dst = append(dst, s[i:i+n]...)
			i += n
		}
	}
	return dst, true
}

// unescape returns the byte of the one-character escape \c, or 0 when \c is
// not one (\u, or no escape).
func unescape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

// hex4 reads the four hexadecimal digits that start s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, h := range s[:4] {
		switch {
		case '0' <= h && h <= '9':
			h -= '0'
		case 'a' <= h && h <= 'f':
			h -= 'a' - 10
		case 'A' <= h && h <= 'F':
			h -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// appendWTF8 appends r as UTF-8, a surrogate (which UTF-8 cannot hold) as the
// three bytes UTF-8's scheme gives it (WTF-8).
func appendWTF8(dst []byte, r rune) []byte {
	if 0xD800 <= r && r < 0xE000 {
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(dst, r)
}

// maximalSubpart returns the length of the invalid UTF-8 sequence at the start
// of s (which utf8.DecodeRune refused), as the WHATWG UTF-8 decoder (Node's)
// reads it: the lead byte and the continuation bytes that may follow it, up to
// the first that may not, which starts the next sequence. Each such sequence
// decodes to one U+FFFD.
func maximalSubpart(s []byte) int {
	lo, hi := byte(0x80), byte(0xBF) // the range of the byte after the lead
	need := 0
	switch c := s[0]; {
	case 0xC2 <= c && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case 0xE1 <= c && c <= 0xEF:
		need = 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	case 0xF1 <= c && c <= 0xF3:
		need = 3
	}
	n := 1
	for ; n <= need && n < len(s) && lo <= s[n] && s[n] <= hi; n++ {
		lo, hi = 0x80, 0xBF
	}
	return n
}
