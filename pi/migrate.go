package pi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// Migration of Pi files of version 1 and 2 to version 3, as Pi migrates them
// on load. It is the only place where the store rewrites entries it did not
// create. It mirrors Pi's in-place JavaScript mutation followed by JSON.stringify:
// existing keys keep their position, new keys ("id", "parentId", "firstKeptEntryId",
// the header's "version") are appended, "firstKeptEntryIndex" is removed. Values
// that are not touched keep their bytes.
//
// Ids given to version 1 entries are deterministic: the first 8 hex digits of
// SHA-256 over the header id, the entry's index among the file's entries (header =
// 0) and the entry's line bytes; on a collision the digest is taken again with a
// counter appended. Two replicas importing one file therefore agree on every id.

// Migrate brings the header and raw entry lines of a version 1 or 2 file to
// version 3. Lines that are not JSON objects are returned unchanged (the caller
// reports them as malformed).
func Migrate(h Header, lines [][]byte) (Header, [][]byte) {
	if h.version >= CurrentVersion {
		return h, lines
	}
	out := make([][]byte, len(lines))
	copy(out, lines)
	objs := make([]Object, len(lines))
	for i, l := range lines {
		if !json.Valid(l) {
			continue
		}
		if o, err := SplitObject(l); err == nil {
			objs[i] = o
		}
	}
	if h.version < 2 {
		// Pi's firstKeptEntryIndex indexes the parsed entries (header = 0,
		// malformed lines skipped); pos maps that index to a line.
		used := make(map[string]bool, len(lines))
		ids := make([]string, len(lines))
		pos := []int{-1}
		prev := []byte("null")
		for i, o := range objs {
			if o == nil {
				continue
			}
			pos = append(pos, i)
			if t, _ := jsonString(o.Get("type")); t == TypeSession {
				continue // a stray header line: Pi leaves it alone
			}
			id := migratedID(h.id, len(pos)-1, lines[i], used)
			ids[i] = id
			idJSON := AppendString(nil, id)
			o = o.Set("id", idJSON)
			o = o.Set("parentId", prev)
			prev = idJSON
			objs[i] = o
		}
		for i, o := range objs {
			if o == nil {
				continue
			}
			if t, _ := jsonString(o.Get("type")); t != TypeCompaction {
				continue
			}
			idx := o.Get("firstKeptEntryIndex")
			if idx == nil {
				continue
			}
			if n, err := strconv.Atoi(string(idx)); err == nil && n >= 1 && n < len(pos) {
				if t, _ := jsonString(objs[pos[n]].Get("type")); t != TypeSession {
					o = o.Set("firstKeptEntryId", AppendString(nil, ids[pos[n]]))
				}
			}
			objs[i] = o.Del("firstKeptEntryIndex")
		}
	}
	for i, o := range objs {
		if o == nil {
			continue
		}
		if t, _ := jsonString(o.Get("type")); t == TypeMessage {
			if m := o.Get("message"); len(m) > 0 && m[0] == '{' {
				if mo, err := SplitObject(m); err == nil {
					if r, _ := jsonString(mo.Get("role")); r == "hookMessage" {
						objs[i] = o.Set("message", mo.Set("role", []byte(`"custom"`)).Marshal())
					}
				}
			}
		}
		out[i] = objs[i].Marshal()
	}
	ho, err := SplitObject(h.raw)
	if err == nil {
		if nh, err := ParseHeader(ho.Set("version", []byte(strconv.Itoa(CurrentVersion))).Marshal()); err == nil {
			h = nh
		}
	}
	return h, out
}

func migratedID(headerID string, index int, line []byte, used map[string]bool) string {
	for n := 0; ; n++ {
		d := sha256.New()
		d.Write([]byte(headerID))
		d.Write([]byte{0})
		d.Write([]byte(strconv.Itoa(index)))
		d.Write([]byte{0})
		d.Write(line)
		if n > 0 {
			d.Write([]byte{0})
			d.Write([]byte(strconv.Itoa(n)))
		}
		id := hex.EncodeToString(d.Sum(nil))[:8]
		if !used[id] {
			used[id] = true
			return id
		}
	}
}
