package cli

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s as a command may print it: unchanged when it is valid UTF-8 of
// printable characters only (unicode.IsPrint: no control, format, bidirectional or
// zero-width character, no line break) and does not start with a double quote;
// otherwise Go-quoted (strconv.Quote), so that an id or text from a segment can
// neither move the cursor, clear the screen, forge an output line, nor look like
// another id, and a quoted string is never mistaken for a plain one. Every command
// prints entry ids, session ids and text from segments through it.
func Escape(s string) string {
	if !strings.HasPrefix(s, `"`) && isPrintable(s) {
		return s
	}
	return strconv.Quote(s)
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// EscapeJSON rewrites encoded JSON so that it holds no character a terminal acts on
// or hides: every rune that encoding/json leaves raw and that is neither printable
// nor a structural space, tab or newline (format characters such as U+202E, which
// only appear inside strings) becomes a \uXXXX escape, which decodes to the same
// value.
func EscapeJSON(data []byte) []byte {
	if isPrintableJSON(data) {
		return data
	}
	var b strings.Builder
	for _, r := range string(data) {
		switch {
		case r == '\n' || r == '\t' || r == ' ' || (r != utf8.RuneError && unicode.IsPrint(r)):
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return []byte(b.String())
}

func isPrintableJSON(data []byte) bool {
	for _, c := range data {
		if c >= 0x80 || (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return isPrintable(strings.NewReplacer("\n", "", "\t", "").Replace(string(data)))
		}
	}
	return true
}
