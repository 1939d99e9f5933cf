package follow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/transcriptstore/transcript/transcript"
)

// shortenedPrefix is how many bytes of an escaped name PartName keeps before
// the "~" and 16 hex digits of its hash, when the name is over
// transcript.MaxRefPartLen bytes.
const shortenedPrefix = transcript.MaxRefPartLen - 17

// PartName maps a name taken from the file system or a file (a session folder
// such as "--home-u-proj--", a session header's id) to an id part that
// transcript.ValidatePart accepts. A name that is a valid part and holds no "%"
// maps to itself (every folder and session id Pi makes). Otherwise:
//
//  1. every byte of "%", "/", "\", a control, format or line-separator character
//     and of invalid UTF-8 is written as %XX (upper-case hex);
//  2. a leading ".", the second "." of "..", the "." of a ".log" ending and the
//     first letter of a name of the key layout (transcript.IsLayoutName: "gc",
//     "L" and digits, "payloads") are written as %XX too;
//  3. a result over transcript.MaxRefPartLen bytes keeps its first
//     shortenedPrefix bytes (not cutting an escape or a character) followed by
//     "~" and the first 16 hex digits of the SHA-256 of the name.
//
// Steps 1 and 2 are injective (every "%" of the result starts an escape, so the
// name can be read back); step 3 maps two names to one part only if their hashes
// collide. The empty name is an error.
func PartName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty name", transcript.ErrInvalidRef)
	}
	if transcript.ValidatePart("name", name) == nil && !strings.Contains(name, "%") {
		return name, nil
	}
	var b strings.Builder
	esc := func(c byte) { fmt.Fprintf(&b, "%%%02X", c) }
	for i := 0; i < len(name); {
		r, n := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && n <= 1, r == '%', r == '/', r == '\\',
			unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			for k := range n {
				esc(name[i+k])
			}
		case r == '.' && (b.Len() == 0 || strings.HasSuffix(b.String(), ".") || name[i:] == ".log"):
			esc('.')
		default:
			b.WriteString(name[i : i+n])
		}
		i += n
	}
	out := b.String()
	if transcript.IsLayoutName(out) {
		out = fmt.Sprintf("%%%02X", out[0]) + out[1:]
	}
	if len(out) > transcript.MaxRefPartLen {
		cut := shortenedPrefix
		// Not inside an escape ("%X" or "%" just before the cut) nor a character.
		if i := strings.LastIndexByte(out[:cut], '%'); i >= 0 && i > cut-3 {
			cut = i
		}
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		sum := sha256.Sum256([]byte(name))
		out = out[:cut] + "~" + hex.EncodeToString(sum[:8])
	}
	if err := transcript.ValidatePart("name", out); err != nil {
		return "", err
	}
	return out, nil
}

// NameOfPart reads back the name PartName mapped to part: its %XX escapes
// undone. It is false when part is not what PartName makes of the name read
// back: a "%" that starts no escape, an escape PartName would not write, or
// most names it shortened (their hash does not round-trip).
func NameOfPart(part string) (string, bool) {
	name := part
	if strings.Contains(part, "%") {
		var b strings.Builder
		for i := 0; i < len(part); i++ {
			if part[i] != '%' {
				b.WriteByte(part[i])
				continue
			}
			if i+2 >= len(part) {
				return "", false
			}
			v, err := strconv.ParseUint(part[i+1:i+3], 16, 8)
			if err != nil {
				return "", false
			}
			b.WriteByte(byte(v))
			i += 2
		}
		name = b.String()
	}
	if again, err := PartName(name); err != nil || again != part {
		return "", false
	}
	return name, true
}
