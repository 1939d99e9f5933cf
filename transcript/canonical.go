package transcript

// CanonicalOrder returns entries in the merge order ReadAll gives them (parents
// before children, then by Origin.Compare) and the parent cycles it broke. Only
// ID, ParentID and Origin are read. A reader that holds entries gathered from
// several reads (a replica that syncs incrementally) orders its whole set with
// it, so that what it derives from the order (the active leaf) is what ReadAll
// of the same entries gives. entries is not modified.
func CanonicalOrder(entries []Entry) ([]Entry, int) {
	ordered, cycles, moved, _ := mergeOrder(entries, nil)
	if !moved {
		ordered = append([]Entry(nil), entries...)
	}
	return ordered, cycles
}
