package jsonscan

// CompactInPlace removes the white space outside strings from v, which must be
// valid JSON, in place (what json.Compact removes, without its copy), and
// returns what remains of v. A string's end is found as the scanners find it.
func CompactInPlace(v []byte) []byte {
	n := 0
	for i := 0; i < len(v); {
		switch c := v[i]; c {
		case '"':
			end, err := skipValue(v, i)
			if err != nil { // not valid JSON: keep the rest as it is
				end = len(v)
			}
			if n == i { // nothing removed yet: the string stays where it is
				n = end
			} else {
				n += copy(v[n:], v[i:end])
			}
			i = end
		case ' ', '\t', '\r', '\n':
			i++
		default:
			v[n] = c
			n++
			i++
		}
	}
	return v[:n]
}
