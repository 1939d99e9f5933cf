package sessiontree

import (
	"slices"
	"strconv"

	"github.com/transcriptstore/transcript/transcript"
)

// originLog is the origins section of a segments file, kept ready to write so
// that a pull that adds a few entries to a long session appends a few records
// instead of formatting every one again. Records come in groups: a line "at
// {key}" (an origin key), then one line "{pos} {sum} {quoted id}" per entry of
// that key, sum the xxhash64 of the entry's bytes in 16 hex digits. A later
// record of an id replaces an earlier one (an earlier origin learned, or a
// version replaced); the log is rebuilt from the tree's records when such
// leftovers make up half of it (Tree.originSection).
type originLog struct {
	text  []byte
	key   string // origin key of the last group in text
	lines int    // record lines in text
	// stale: a record was dropped (it did not match its entry's bytes), so text
	// must be rebuilt before it is written.
	stale bool
}

// add appends the record of id.
func (l *originLog) add(id string, o transcript.Origin, sum uint64) {
	if o.Key != l.key || l.lines == 0 {
		l.text = append(append(append(l.text, originKeyLine...), o.Key...), '\n')
		l.key = o.Key
	}
	l.text = strconv.AppendInt(l.text, int64(o.Pos), 10)
	l.text = append(l.text, ' ')
	l.text = appendHex16(l.text, sum)
	l.text = append(l.text, ' ')
	l.text = strconv.AppendQuote(l.text, id)
	l.text = append(l.text, '\n')
	l.lines++
}

// originLogOf returns the log of rs (one record per id), grouped by origin key
// in key order.
func originLogOf(rs []originRecord) originLog {
	groups := map[string][]originRecord{}
	for _, r := range rs {
		groups[r.origin.Key] = append(groups[r.origin.Key], r)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var l originLog
	for _, k := range keys {
		for _, r := range groups[k] {
			l.add(r.id, r.origin, r.sum)
		}
	}
	return l
}

// appendHex16 appends v as 16 lowercase hex digits.
func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[v>>uint(shift)&0xf])
	}
	return b
}

// originSection returns the origins section the segments file is written with:
// the log, rebuilt from the tree's records first when it is stale or more than
// half of it is replaced records. t.mu is held.
func (t *Tree) originSection() []byte {
	l := &t.stored.olog
	if l.stale || l.lines > 2*len(t.stored.origins)+1024 {
		rs := make([]originRecord, 0, len(t.stored.origins))
		for id, h := range t.stored.origins {
			rs = append(rs, originRecord{id: id, origin: h.origin, sum: h.sum})
		}
		*l = originLogOf(rs)
	}
	return l.text
}
