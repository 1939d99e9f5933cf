package jsonscan

// StringContent reports whether b, put between two quotes, is a JSON string that
// encoding/json's Valid accepts: no byte below 0x20, no unescaped quote, and
// every backslash the start of a complete escape (\" \\ \/ \b \f \n \r \t or
// \u and four hex digits). Bytes of 0x80 and above pass unchecked, as Valid
// lets them (it does not check UTF-8). Replacing the contents of a string of a
// valid JSON text by such bytes leaves the text valid, with the same structure.
func StringContent(b []byte) bool {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		if c != '\\' || i+1 >= len(b) {
			return false
		}
		i++
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(b) {
				return false
			}
			for _, h := range b[i+1 : i+5] {
				if !isHex(h) {
					return false
				}
			}
			i += 4
		default:
			return false
		}
	}
	return true
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
