package jsonscan

import "encoding/binary"

// StringContent reports whether b, put between two quotes, is a JSON string that
// encoding/json's Valid accepts: no byte below 0x20, no unescaped quote, and
// every backslash the start of a complete escape (\" \\ \/ \b \f \n \r \t or
// \u and four hex digits). Bytes of 0x80 and above pass unchecked, as Valid
// lets them (it does not check UTF-8). Replacing the contents of a string of a
// valid JSON text by such bytes leaves the text valid, with the same structure.
// Eight bytes without a quote, a backslash or a control character are passed
// at once, so a payload of base64 is checked at memory speed.
func StringContent(b []byte) bool {
	i := 0
	for i < len(b) {
		if i+8 <= len(b) && !specialIn(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
			continue
		}
		c := b[i]
		i++
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		if c != '\\' || i >= len(b) {
			return false
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+4 >= len(b) {
				return false
			}
			for _, h := range b[i+1 : i+5] {
				if !isHex(h) {
					return false
				}
			}
			i += 5
		default:
			return false
		}
	}
	return true
}

// Bytes of eight copies, for specialIn.
const (
	ones   = 0x0101010101010101
	highs  = 0x8080808080808080
	quotes = '"' * ones
	backsl = '\\' * ones
	spaces = 0x20 * ones
)

// specialIn reports whether one of the eight bytes of w is below 0x20, a quote
// or a backslash (a byte of 0x80 or above may be reported too: the caller then
// looks at each byte).
func specialIn(w uint64) bool {
	zero := func(x uint64) uint64 { return (x - ones) &^ x & highs } // a zero byte
	return (w-spaces)&^w&highs|zero(w^quotes)|zero(w^backsl) != 0
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
