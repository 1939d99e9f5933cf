package sessiontree

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// Migration of Pi files of version 1 and 2 to version 3 (docs/ENTRIES.md, "Older
// versions"). It is the only place where the store rewrites entries it did not
// create. It mirrors Pi's in-place JavaScript mutation followed by JSON.stringify:
// existing keys keep their position, new keys ("id", "parentId", "firstKeptEntryId",
// the header's "version") are appended, "firstKeptEntryIndex" is removed. Values
// that are not touched keep their bytes.
//
// Ids given to version 1 entries are deterministic: the first 8 hex digits of
// SHA-256 over the header id, the entry's index among the file's entries (header =
// 0) and the entry's line bytes; on a collision the digest is taken again with a
// counter appended. Two replicas importing one file therefore agree on every id.

// kv is one top-level member of a JSON object.
type kv struct {
	key string
	val []byte
}

type object []kv

func splitObject(raw []byte) (object, error) {
	var o object
	err := eachField(raw, func(k string, v []byte, _ int) { o = append(o, kv{k, v}) })
	return o, err
}

// set replaces the value of key in place (every occurrence) or appends it.
func (o object) set(key string, val []byte) object {
	found := false
	for i := range o {
		if o[i].key == key {
			o[i].val, found = val, true
		}
	}
	if !found {
		o = append(o, kv{key, val})
	}
	return o
}

func (o object) del(key string) object {
	out := o[:0]
	for _, m := range o {
		if m.key != key {
			out = append(out, m)
		}
	}
	return out
}

func (o object) get(key string) []byte {
	var v []byte
	for _, m := range o {
		if m.key == key {
			v = m.val
		}
	}
	return v
}

// marshal writes the object compactly. Duplicate keys collapse to one (JSON.parse
// keeps the last value at the first key's position).
func (o object) marshal() []byte {
	b := []byte{'{'}
	seen := make(map[string]bool, len(o))
	for _, m := range o {
		if seen[m.key] {
			continue
		}
		seen[m.key] = true
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendJSONString(b, m.key)
		b = append(b, ':')
		b = append(b, o.get(m.key)...)
	}
	return append(b, '}')
}

// migrate brings the header and raw entry lines of a version 1 or 2 file to
// version 3. Lines that are not JSON objects are returned unchanged (the caller
// reports them as malformed).
func migrate(h Header, lines [][]byte) (Header, [][]byte) {
	if h.version >= CurrentVersion {
		return h, lines
	}
	out := make([][]byte, len(lines))
	copy(out, lines)
	objs := make([]object, len(lines))
	for i, l := range lines {
		if !json.Valid(l) {
			continue
		}
		if o, err := splitObject(l); err == nil {
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
			if t, _ := jsonString(o.get("type")); t == TypeSession {
				continue // a stray header line: Pi leaves it alone
			}
			id := migratedID(h.id, len(pos)-1, lines[i], used)
			ids[i] = id
			idJSON := appendJSONString(nil, id)
			o = o.set("id", idJSON)
			o = o.set("parentId", prev)
			prev = idJSON
			objs[i] = o
		}
		for i, o := range objs {
			if o == nil {
				continue
			}
			if t, _ := jsonString(o.get("type")); t != TypeCompaction {
				continue
			}
			idx := o.get("firstKeptEntryIndex")
			if idx == nil {
				continue
			}
			if n, err := strconv.Atoi(string(idx)); err == nil && n >= 1 && n < len(pos) {
				if t, _ := jsonString(objs[pos[n]].get("type")); t != TypeSession {
					o = o.set("firstKeptEntryId", appendJSONString(nil, ids[pos[n]]))
				}
			}
			objs[i] = o.del("firstKeptEntryIndex")
		}
	}
	for i, o := range objs {
		if o == nil {
			continue
		}
		if t, _ := jsonString(o.get("type")); t == TypeMessage {
			if m := o.get("message"); len(m) > 0 && m[0] == '{' {
				if mo, err := splitObject(m); err == nil {
					if r, _ := jsonString(mo.get("role")); r == "hookMessage" {
						objs[i] = o.set("message", mo.set("role", []byte(`"custom"`)).marshal())
					}
				}
			}
		}
		out[i] = objs[i].marshal()
	}
	ho, err := splitObject(h.raw)
	if err == nil {
		if nh, err := ParseHeader(ho.set("version", []byte(strconv.Itoa(CurrentVersion))).marshal()); err == nil {
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
