package sessiontree

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/cespare/xxhash/v2"

	"github.com/transcriptstore/transcript/transcript"
)

// originLog is the tree's side of the origins file (originsfile.go): the records
// not written to it yet, and what the file holds, so that a pull that adds a few
// entries to a long session appends a few records instead of writing every one
// again. Records come in groups: a line "at {key}" (an origin key), then one
// line "{pos} {sum} {quoted id}" per entry of that key, sum the xxhash64 of the
// entry's bytes in 16 hex digits. A later record of an id replaces an earlier one
// (an earlier origin learned, or a version replaced); the file is written again
// from the tree's records when such leftovers make up half of it (Tree.saveOrigins).
type originLog struct {
	// pending are the records not in the file yet.
	pending []byte
	key     string // origin key of the last group written or pending
	lines   int    // record lines in the file and pending
	// stale: a record was dropped (it did not match its entry's bytes), or the
	// file is not known to hold what size and digest say: the file must be
	// written again whole before the segments file names it.
	stale bool
	// size and digest are the length of the origins file and the xxhash64 state
	// of its bytes, as the segments file records them; inFile: they describe the
	// file (false before this tree wrote it).
	size   int64
	digest xxhash.Digest
	inFile bool
}

// add appends the record of id.
func (l *originLog) add(id string, o transcript.Origin, sum uint64) {
	if o.Key != l.key || l.lines == 0 {
		l.pending = append(append(append(l.pending, originKeyLine...), o.Key...), '\n')
		l.key = o.Key
	}
	l.pending = strconv.AppendInt(l.pending, int64(o.Pos), 10)
	l.pending = append(l.pending, ' ')
	l.pending = appendHex16(l.pending, sum)
	l.pending = append(l.pending, ' ')
	l.pending = strconv.AppendQuote(l.pending, id)
	l.pending = append(l.pending, '\n')
	l.lines++
}

// originLogOf returns the log of rs (one record per id), grouped by origin key
// in key order, every record pending.
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

// saveOrigins brings the origins file up to date with the tree's records and
// returns its length and checksum, for the segments file: it appends the
// pending records, or writes the file again from the tree's records when the
// log is stale, was never written by this tree, or is more than half replaced
// records. t.mu is held.
func (t *Tree) saveOrigins() (int64, uint64, error) {
	l := &t.stored.olog
	if !l.stale && l.inFile && l.lines <= 2*len(t.stored.origins)+1024 {
		if len(l.pending) == 0 {
			return l.size, l.digest.Sum64(), nil
		}
		if err := appendOrigins(t.files.Origins, l.size, l.pending, t.cfg.NoSync); err == nil {
			_, _ = l.digest.Write(l.pending)
			l.size += int64(len(l.pending))
			l.pending = l.pending[:0]
			return l.size, l.digest.Sum64(), nil
		}
		// The file is not as this tree left it (removed, cut short) or the append
		// failed: write it again whole.
	}
	rs := make([]originRecord, 0, len(t.stored.origins))
	for id, h := range t.stored.origins {
		rs = append(rs, originRecord{id: id, origin: h.origin, sum: h.sum})
	}
	*l = originLogOf(rs)
	data := append([]byte(originsHeader+"\n"), l.pending...)
	if err := writeOriginsFile(t.files.Origins, data, t.cfg.NoSync); err != nil {
		l.stale = true
		return 0, 0, fmt.Errorf("save origins of %s: %w", t.ref, err)
	}
	l.pending, l.size, l.inFile = nil, int64(len(data)), true
	l.digest.Reset()
	_, _ = l.digest.Write(data)
	return l.size, l.digest.Sum64(), nil
}
