package jsonscan

// CompactInPlace removes the white space outside strings from v, which must be
// valid JSON, in place (what json.Compact removes, without its copy), and
// returns what remains of v. A string's end is found as the scanners find it.
func CompactInPlace(v []byte) []byte {
	out, _ := CompactInPlaceIf(v, nil)
	return out
}

// CompactInPlaceIf is CompactInPlace that, when v holds white space to remove,
// first asks proceed (unless it is nil), while v is still as given: if proceed
// returns false, v is left unchanged and CompactInPlaceIf returns v and false.
// A caller that must keep what it was given when something changes (to check it,
// or to answer about it) does so there, and only then.
func CompactInPlaceIf(v []byte, proceed func() bool) ([]byte, bool) {
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
			if n == i && proceed != nil { // the first byte removed: nothing moved yet
				if !proceed() {
					return v, false
				}
				proceed = nil
			}
			i++
		default:
			v[n] = c
			n++
			i++
		}
	}
	return v[:n], true
}
